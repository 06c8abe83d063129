//! The words a module is found by beyond its address and description: its root module's
//! input and output names (whole, as `name_prefix`, and in parts) and descriptions, then its
//! README's, each word once, lowercased,
//! at most [`MAX_SEARCH_WORDS`] bytes. Kept with the module's listing entry, so a search
//! reads nothing else; bounded, so the listing stays small however long a README is.

use std::collections::HashSet;

use super::ModuleDocs;

/// The most bytes of words kept per module: what a listing entry may grow by.
pub const MAX_SEARCH_WORDS: usize = 2048;

/// Words shorter than this find too much to be worth keeping.
const MIN_WORD: usize = 2;
/// Longer runs are hashes, keys or encoded data, not words.
const MAX_WORD: usize = 40;

impl ModuleDocs {
    /// The words to find the module by, space-separated: inputs and outputs first, then the
    /// README, until [`MAX_SEARCH_WORDS`] bytes.
    pub fn search_words(&self) -> String {
        let root = &self.root;
        let io = root
            .inputs
            .iter()
            .flat_map(|i| [i.name.as_str(), i.description.as_str()])
            .chain(
                root.outputs
                    .iter()
                    .flat_map(|o| [o.name.as_str(), o.description.as_str()]),
            );
        let mut seen = HashSet::new();
        let mut words = String::new();
        for text in io.chain(std::iter::once(root.readme.as_str())) {
            // A name (`name_prefix`) is kept whole too, so a search for it finds it; its
            // parts follow.
            let whole = text
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
                .then_some(text)
                .filter(|t| !t.chars().all(char::is_alphanumeric));
            let parts = text.split(|c: char| !c.is_alphanumeric());
            for word in whole.into_iter().chain(parts) {
                let length = word.chars().count();
                if !(MIN_WORD..=MAX_WORD).contains(&length) {
                    continue;
                }
                let word = word.to_lowercase();
                if words.len() + word.len() + 1 > MAX_SEARCH_WORDS {
                    return words;
                }
                if seen.insert(word.clone()) {
                    if !words.is_empty() {
                        words.push(' ');
                    }
                    words.push_str(&word);
                }
            }
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use crate::module_docs::{ModuleDocs, ModuleInput, ModuleOutput, ModulePart};

    #[test]
    fn inputs_and_outputs_come_first_then_the_readme_each_word_once_and_bounded() {
        let docs = ModuleDocs {
            root: ModulePart {
                readme: "# Network\n\nCreates a VPC. The VPC spans `three` zones: a, b.".into(),
                inputs: vec![ModuleInput {
                    name: "cidr_block".into(),
                    description: "The VPC's CIDR".into(),
                    ..ModuleInput::default()
                }],
                outputs: vec![ModuleOutput {
                    name: "vpc_id".into(),
                    description: String::new(),
                    sensitive: false,
                }],
                ..ModulePart::default()
            },
            ..ModuleDocs::default()
        };
        assert_eq!(
            docs.search_words(),
            "cidr_block cidr block the vpc vpc_id id network creates spans three zones"
        );
        let long = ModuleDocs {
            root: ModulePart {
                readme: (0..5000).map(|i| format!("word{i} ")).collect(),
                ..ModulePart::default()
            },
            ..ModuleDocs::default()
        };
        let words = long.search_words();
        assert!(words.len() <= super::MAX_SEARCH_WORDS, "{}", words.len());
        assert!(words.len() > super::MAX_SEARCH_WORDS - 16);
        assert!(words.starts_with("word0 word1 "));
    }
}
