//! The modules' catalogue as an index, made once per change of the listing and kept: every
//! module's summary in address order, with a search index. A page of the catalogue walks
//! only as far as it shows; a search looks its words up instead of reading every module,
//! then checks the few it found.
//!
//! A module matches a search when, for every word of the query (in any case), its address
//! or description holds the word as a substring, or, for a word of letters, digits, `_`
//! and `-` only, one of the words of its README, inputs and outputs
//! ([`ModuleSummary::words`], where input and output names are also kept whole:
//! `name_prefix`) starts with it. Each run of letters and digits in a query word lies inside one such run
//! of the address and description, so the modules a word can match there are those with a
//! token containing each of its runs: found by binary search among the sorted suffixes of
//! their distinct tokens (checked against the text when the word has more than one run).
//! The other words are indexed whole, sorted, so a prefix is one binary search. Matches are
//! ranked: a word in the address counts most, then in the description, then elsewhere;
//! ties stay in address order.
//!
//! The pages asked of a catalogue are kept with it, as answered: a page is made of the
//! catalogue alone (and what it was asked with), so it holds until the catalogue is made
//! again, and the catalogue's first page, the one every visit starts from, costs a lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::modules::ModuleFilter;
use super::page::Page;
use crate::protocol::details::ModuleList;
use crate::store::ModuleSummary;
use crate::tokens::Access;

/// At most this many pages are kept per catalogue; past it, all are dropped and made
/// again as asked (searches are a client's choice: the bound is what they can cost).
const MAX_KEPT_PAGES: usize = 256;

/// Everything a page of the catalogue depends on besides the catalogue: what the token
/// may read, the filter, the page, and the links' path and parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    access: Access,
    filter: ModuleFilter,
    page: Page,
    path: String,
    params: Vec<(String, String)>,
}

impl PageKey {
    /// The key of a page asked with these.
    pub fn new(
        access: &Access,
        filter: &ModuleFilter,
        page: Page,
        path: &str,
        params: &[(&str, &str)],
    ) -> Self {
        Self {
            access: access.clone(),
            filter: filter.clone(),
            page,
            path: path.to_owned(),
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }
}

/// Every listed module, and the index that finds them by words.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Every listed module, in address order (so a namespace's are together).
    modules: Vec<ModuleSummary>,
    /// Each module's address and description, lowercased.
    texts: Vec<String>,
    /// Where each text's address ends: what ranks a match.
    addresses: Vec<usize>,
    /// The tokens of the texts: every suffix of each, sorted, with the modules holding it.
    suffixes: Postings,
    /// The other words (README, inputs, outputs), each whole, sorted.
    words: Postings,
    /// The pages answered from this catalogue.
    pages: Mutex<HashMap<PageKey, Arc<ModuleList>>>,
}

/// Sorted keys, each with the modules holding it.
#[derive(Debug, Default)]
struct Postings {
    /// The keys, sorted, each with its list.
    keys: Vec<(Box<str>, u32)>,
    /// The lists: module positions, in order.
    lists: Vec<Vec<u32>>,
}

impl Postings {
    /// The postings of `entries` (module, token), given in module order; with `suffixes`,
    /// every suffix of each token is a key.
    fn new<'a>(entries: impl Iterator<Item = (u32, &'a str)>, suffixes: bool) -> Self {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut lists: Vec<Vec<u32>> = Vec::new();
        for (module, token) in entries {
            let next = ids.len() as u32;
            let id = *ids.entry(token).or_insert(next);
            if id == next {
                lists.push(Vec::new());
            }
            let list = &mut lists[id as usize];
            if list.last() != Some(&module) {
                list.push(module);
            }
        }
        let mut keys: Vec<(Box<str>, u32)> = match suffixes {
            true => ids
                .iter()
                .flat_map(|(token, id)| {
                    token
                        .char_indices()
                        .map(move |(at, _)| (Box::from(&token[at..]), *id))
                })
                .collect(),
            false => ids.iter().map(|(t, id)| (Box::from(*t), *id)).collect(),
        };
        keys.sort_unstable();
        Self { keys, lists }
    }

    /// The modules holding a key that starts with `part`, in order.
    fn starting_with(&self, part: &str) -> Vec<u32> {
        let start = self.keys.partition_point(|(k, _)| &**k < part);
        let mut found: Vec<u32> = self.keys[start..]
            .iter()
            .take_while(|(k, _)| k.starts_with(part))
            .flat_map(|(_, list)| self.lists[*list as usize].iter().copied())
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// The runs of letters and digits in `text`.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

/// True when `word` is one run of letters and digits.
fn one_run(word: &str) -> bool {
    !word.is_empty() && word.chars().all(char::is_alphanumeric)
}

/// True when `word` may begin one of a module's other words: letters, digits, `_` and `-`
/// (input and output names are kept whole among them).
fn name_like(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// A module's other words: space-separated, each whole.
fn other_words(words: &str) -> impl Iterator<Item = &str> {
    words.split_whitespace()
}

impl Catalogue {
    /// The catalogue of `summaries` (in any order).
    pub fn new(mut summaries: Vec<ModuleSummary>) -> Self {
        summaries.sort_by_cached_key(|s| s.address.to_string());
        for summary in &mut summaries {
            summary.words.make_ascii_lowercase();
        }
        let (texts, addresses): (Vec<String>, Vec<usize>) = summaries
            .iter()
            .map(|s| {
                let address = s.address.to_string();
                let description = s.description.as_deref().unwrap_or_default();
                (
                    format!("{address} {description}").to_lowercase(),
                    address.len(),
                )
            })
            .unzip();
        let suffixes = Postings::new(
            texts
                .iter()
                .enumerate()
                .flat_map(|(i, text)| tokens(text).map(move |t| (i as u32, t))),
            true,
        );
        let words = Postings::new(
            summaries
                .iter()
                .enumerate()
                .flat_map(|(i, s)| other_words(&s.words).map(move |t| (i as u32, t))),
            false,
        );
        Self {
            modules: summaries,
            texts,
            addresses,
            suffixes,
            words,
            pages: Mutex::default(),
        }
    }

    /// The page asked with `key`, if it was answered from this catalogue before.
    pub fn kept_page(&self, key: &PageKey) -> Option<Arc<ModuleList>> {
        self.pages.lock().ok()?.get(key).cloned()
    }

    /// Keeps a page answered from this catalogue.
    pub fn keep_page(&self, key: PageKey, page: Arc<ModuleList>) {
        let Ok(mut pages) = self.pages.lock() else {
            return;
        };
        if pages.len() >= MAX_KEPT_PAGES {
            pages.clear();
        }
        pages.insert(key, page);
    }

    /// How many modules are listed.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// True when no module is listed.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The modules that match `word` (lowercase), in order: those that surely do, and those
    /// that may, to check against the text. A word of one run matches exactly the modules
    /// with a token containing it or a word starting with it; a word of several runs, only
    /// modules holding each run (checked), and, when it is name-like (`name_prefix`), those
    /// with a word starting with it.
    fn matching(&self, word: &str) -> (Vec<u32>, Vec<u32>) {
        if one_run(word) {
            let mut found = self.suffixes.starting_with(word);
            found.extend(self.words.starting_with(word));
            found.sort_unstable();
            found.dedup();
            return (found, Vec::new());
        }
        let sure = match name_like(word) {
            true => self.words.starting_with(word),
            false => Vec::new(),
        };
        let mut parts: Vec<&str> = tokens(word).collect();
        // The longest parts first: they find the fewest modules.
        parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
        parts.dedup();
        let mut found: Option<Vec<u32>> = None;
        for part in parts {
            let holding = self.suffixes.starting_with(part);
            found = Some(match found {
                None => holding,
                Some(known) => intersect(&known, &holding),
            });
        }
        match found {
            Some(found) => (sure, found),
            // No letters or digits: every module, checked.
            None => (sure, (0..self.modules.len() as u32).collect()),
        }
    }

    /// How much `word`, matched by module `i`, counts: in the address most, then in the
    /// description, then among its other words.
    fn weight(&self, i: usize, word: &str) -> u32 {
        let text = &self.texts[i];
        if text[..self.addresses[i]].contains(word) {
            4
        } else if text.contains(word) {
            2
        } else {
            1
        }
    }

    /// The modules `filter` selects that `access` may read, skipping `skip` of them and
    /// stopping after `take`. Without a query, in address order, and no more of the
    /// catalogue is read than the page and whether another follows need; with one, ranked
    /// (every match is found, from the index, to rank it).
    pub fn select(
        &self,
        access: &Access,
        filter: &ModuleFilter,
        skip: usize,
        take: usize,
    ) -> Vec<&ModuleSummary> {
        let query = filter.query.as_deref().map(str::to_lowercase);
        let mut words: Vec<&str> = query
            .as_deref()
            .map(|q| q.split_whitespace().collect())
            .unwrap_or_default();
        words.dedup();
        let range = match &filter.namespace {
            Some(namespace) => self.namespace_range(namespace.as_str()),
            None => 0..self.modules.len(),
        };
        let allowed = |i: &usize| {
            let summary = &self.modules[*i];
            access.allows(&summary.address.namespace) && filter.selects(summary)
        };
        if words.is_empty() {
            return range
                .filter(allowed)
                .skip(skip)
                .take(take)
                .map(|i| &self.modules[i])
                .collect();
        }
        // The modules matching every word: the rarest lists first.
        let mut found: Option<Vec<u32>> = None;
        for word in &words {
            let (sure, unsure) = self.matching(word);
            let mut holding: Vec<u32> = unsure
                .into_iter()
                .filter(|i| self.texts[*i as usize].contains(word))
                .chain(sure)
                .collect();
            holding.sort_unstable();
            holding.dedup();
            found = Some(match found {
                None => holding,
                Some(known) => intersect(&known, &holding),
            });
            if found.as_ref().is_some_and(Vec::is_empty) {
                break;
            }
        }
        let mut ranked: Vec<(std::cmp::Reverse<u32>, usize)> = found
            .unwrap_or_default()
            .into_iter()
            .map(|i| i as usize)
            .filter(|i| range.contains(i))
            .filter(allowed)
            .map(|i| {
                let score = words.iter().map(|w| self.weight(i, w)).sum();
                (std::cmp::Reverse(score), i)
            })
            .collect();
        ranked.sort_unstable();
        ranked
            .into_iter()
            .skip(skip)
            .take(take)
            .map(|(_, i)| &self.modules[i])
            .collect()
    }

    /// The positions of a namespace's modules (names are compared in lowercase, as they
    /// are stored).
    fn namespace_range(&self, namespace: &str) -> std::ops::Range<usize> {
        let key = |s: &ModuleSummary| s.address.namespace.as_str().to_ascii_lowercase();
        let wanted = namespace.to_ascii_lowercase();
        let start = self.modules.partition_point(|s| key(s) < wanted);
        let end = self.modules.partition_point(|s| key(s) <= wanted);
        start..end
    }
}

/// The elements of two sorted lists that are in both.
fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut both) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    both
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{ModuleAddress, Namespace};
    use crate::version::Version;

    fn summary(address: &str, description: &str) -> ModuleSummary {
        let p: Vec<&str> = address.split('/').collect();
        ModuleSummary {
            address: ModuleAddress::parse(p[0], p[1], p[2]).unwrap(),
            version: Version::parse("1.0.0").unwrap(),
            published_at: 0,
            source: None,
            description: Some(description.into()),
            words: String::new(),
            deprecation: None,
        }
    }

    fn catalogue() -> Catalogue {
        Catalogue::new(vec![
            summary("zeta/dns/aws", "Route 53 zones"),
            summary("acme/network/aws", "VPC with Subnets"),
            summary("acme/network/gcp", "VPC network"),
            summary("beta/subnet-calc/aws", "CIDR maths"),
        ])
    }

    fn found(c: &Catalogue, access: &Access, filter: &ModuleFilter) -> Vec<String> {
        c.select(access, filter, 0, 100)
            .iter()
            .map(|s| s.address.to_string())
            .collect()
    }

    fn query(q: &str) -> ModuleFilter {
        ModuleFilter {
            query: Some(q.into()),
            ..Default::default()
        }
    }

    /// What search means: every word in the address or description as a substring, or,
    /// for a word of letters, digits, `_` and `-`, at the start of one of the other words.
    fn by_scanning(c: &Catalogue, q: &str) -> Vec<String> {
        let q = q.to_lowercase();
        c.modules
            .iter()
            .zip(&c.texts)
            .filter(|(s, text)| {
                q.split_whitespace().all(|w| {
                    text.contains(w)
                        || (name_like(w) && s.words.split(' ').any(|t| t.starts_with(w)))
                })
            })
            .map(|(s, _)| s.address.to_string())
            .collect()
    }

    #[test]
    fn search_finds_what_scanning_every_module_finds() {
        let c = catalogue();
        for q in [
            "subnet",
            "SUBNETS acme",
            "acme/network",
            "cme/netw",
            "net",
            "vpc gcp",
            "53",
            "/",
            "nothing-here",
            "calc aws",
            "t/a",
        ] {
            assert_eq!(
                sorted(found(&c, &Access::All, &query(q))),
                sorted(by_scanning(&c, q)),
                "{q}"
            );
        }
        // Ranked: a word in the address before one in the description.
        assert_eq!(
            found(&c, &Access::All, &query("subnet")),
            ["beta/subnet-calc/aws", "acme/network/aws"]
        );
    }

    /// What scanning finds, in any order.
    fn sorted(mut found: Vec<String>) -> Vec<String> {
        found.sort();
        found
    }

    #[test]
    fn readme_inputs_and_outputs_are_found_and_rank_below_address_and_description() {
        let mut documented = summary("acme/dns/aws", "Zones");
        documented.words = "zone name the route53 zone to create readme mentions vpc".into();
        let c = Catalogue::new(vec![
            documented,
            summary("acme/network/aws", "VPC with Subnets"),
            summary("acme/vpc/aws", "Peering"),
        ]);
        for q in [
            "route53",
            "vpc",
            "zone name",
            "VPC zones",
            "mentions network",
            "rout",
            "oute53",
            "zones/zone",
        ] {
            assert_eq!(
                sorted(found(&c, &Access::All, &query(q))),
                sorted(by_scanning(&c, q)),
                "{q}"
            );
        }
        assert_eq!(found(&c, &Access::All, &query("route53")), ["acme/dns/aws"]);
        assert_eq!(
            found(&c, &Access::All, &query("vpc")),
            ["acme/vpc/aws", "acme/network/aws", "acme/dns/aws"]
        );
        // A description's end and the words' start are not one word.
        assert!(found(&c, &Access::All, &query("zoneszone")).is_empty());
        // Pages of a ranked search.
        let page: Vec<String> = c
            .select(&Access::All, &query("vpc"), 1, 1)
            .iter()
            .map(|s| s.address.to_string())
            .collect();
        assert_eq!(page, ["acme/network/aws"]);
    }

    #[test]
    fn input_and_output_names_are_found_whole_as_well_as_by_their_parts() {
        use crate::module_docs::{ModuleDocs, ModuleInput, ModuleOutput, ModulePart};
        // Given a module with an input `instance-type` and an output `name_prefix`,
        let docs = ModuleDocs {
            root: ModulePart {
                inputs: vec![ModuleInput {
                    name: "instance-type".into(),
                    ..ModuleInput::default()
                }],
                outputs: vec![ModuleOutput {
                    name: "name_prefix".into(),
                    description: String::new(),
                    sensitive: false,
                }],
                ..ModulePart::default()
            },
            ..ModuleDocs::default()
        };
        let mut documented = summary("acme/naming/aws", "Labels");
        documented.words = docs.search_words();
        let c = Catalogue::new(vec![documented, summary("acme/network/aws", "VPC")]);
        // a search finds it by either name, whole or begun, in any case, and by their parts,
        for q in [
            "name_prefix",
            "NAME_PREFIX",
            "name_pre",
            "prefix",
            "instance-type",
            "instance-",
            "type labels",
        ] {
            assert_eq!(
                found(&c, &Access::All, &query(q)),
                ["acme/naming/aws"],
                "{q}"
            );
            assert_eq!(
                sorted(found(&c, &Access::All, &query(q))),
                sorted(by_scanning(&c, q)),
                "{q}"
            );
        }
        // but not by a name it does not have.
        for q in ["name_suffix", "prefix_name", "ame_prefix"] {
            assert!(found(&c, &Access::All, &query(q)).is_empty(), "{q}");
        }
    }

    #[test]
    fn pages_scopes_and_namespaces_select_in_address_order() {
        let c = catalogue();
        let all = ModuleFilter::default();
        assert_eq!(
            found(&c, &Access::All, &all),
            [
                "acme/network/aws",
                "acme/network/gcp",
                "beta/subnet-calc/aws",
                "zeta/dns/aws"
            ]
        );
        let page: Vec<String> = c
            .select(&Access::All, &all, 1, 2)
            .iter()
            .map(|s| s.address.to_string())
            .collect();
        assert_eq!(page, ["acme/network/gcp", "beta/subnet-calc/aws"]);
        let zeta = Namespace::parse("zeta").unwrap();
        let scoped = Access::Namespaces([zeta.clone()].into());
        assert_eq!(found(&c, &scoped, &all), ["zeta/dns/aws"]);
        assert!(found(&c, &scoped, &query("vpc")).is_empty());
        let in_acme = ModuleFilter {
            namespace: Some(Namespace::parse("ACME").unwrap()),
            system: Some("GCP".into()),
            ..Default::default()
        };
        assert_eq!(found(&c, &Access::All, &in_acme), ["acme/network/gcp"]);
    }
}
