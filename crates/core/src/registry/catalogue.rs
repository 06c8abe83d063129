//! The modules' catalogue as an index, made once per change of the listing and kept: every
//! module's summary in address order, with a search index over the words of its address
//! and description. A page of the catalogue walks only as far as it shows; a search looks
//! its words up instead of reading every module, then checks the few it found.
//!
//! Search keeps its meaning: a module matches when its address and description, in any
//! case, hold every word of the query as a substring. Each run of letters and digits in a
//! query word lies inside one such run of the text, so the modules a word can match are
//! those with a token containing each of its runs: found by binary search among the sorted
//! suffixes of the distinct tokens, then checked against the whole text.
//!
//! The pages asked of a catalogue are kept with it, as answered: a page is made of the
//! catalogue alone (and what it was asked with), so it holds until the catalogue is made
//! again, and the catalogue's first page, the one every visit starts from, costs a lookup.

use std::collections::{BTreeMap, HashMap};
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
    /// Each module's searchable text: its address and description, lowercased.
    texts: Vec<String>,
    /// The suffixes of every distinct token, sorted, each with its token.
    suffixes: Vec<(Box<str>, u32)>,
    /// For each token, the modules whose text holds it, in order.
    postings: Vec<Vec<u32>>,
    /// The pages answered from this catalogue.
    pages: Mutex<HashMap<PageKey, Arc<ModuleList>>>,
}

/// The runs of letters and digits in `text`.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

impl Catalogue {
    /// The catalogue of `summaries` (in any order).
    pub fn new(mut summaries: Vec<ModuleSummary>) -> Self {
        summaries.sort_by_cached_key(|s| s.address.to_string());
        let texts: Vec<String> = summaries
            .iter()
            .map(|s| {
                format!(
                    "{} {}",
                    s.address,
                    s.description.as_deref().unwrap_or_default()
                )
                .to_lowercase()
            })
            .collect();
        let mut ids: BTreeMap<&str, u32> = BTreeMap::new();
        let mut postings: Vec<Vec<u32>> = Vec::new();
        for (module, text) in texts.iter().enumerate() {
            for token in tokens(text) {
                let next = ids.len() as u32;
                let id = *ids.entry(token).or_insert(next);
                if id == next {
                    postings.push(Vec::new());
                }
                let list = &mut postings[id as usize];
                if list.last() != Some(&(module as u32)) {
                    list.push(module as u32);
                }
            }
        }
        let mut suffixes: Vec<(Box<str>, u32)> = ids
            .iter()
            .flat_map(|(token, id)| {
                token
                    .char_indices()
                    .map(move |(at, _)| (Box::from(&token[at..]), *id))
            })
            .collect();
        suffixes.sort_unstable();
        Self {
            modules: summaries,
            texts,
            suffixes,
            postings,
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

    /// The modules holding a token that contains `part`, in order.
    fn holding(&self, part: &str) -> Vec<u32> {
        let start = self.suffixes.partition_point(|(s, _)| &**s < part);
        let mut found: Vec<u32> = self.suffixes[start..]
            .iter()
            .take_while(|(s, _)| s.starts_with(part))
            .flat_map(|(_, token)| self.postings[*token as usize].iter().copied())
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The modules that may hold every word of `query`, in order; `None` when the words
    /// have no letters or digits to look up (every module is then checked).
    fn candidates(&self, query: &str) -> Option<Vec<u32>> {
        let mut parts: Vec<&str> = tokens(query).collect();
        // The longest parts first: they find the fewest modules.
        parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
        parts.dedup();
        let mut found: Option<Vec<u32>> = None;
        for part in parts {
            let holding = self.holding(part);
            found = Some(match found {
                None => holding,
                Some(known) => intersect(&known, &holding),
            });
            if found.as_ref().is_some_and(Vec::is_empty) {
                break;
            }
        }
        found
    }

    /// The modules `filter` selects that `access` may read, in address order, skipping
    /// `skip` of them and stopping after `take`: no more of the catalogue is read than
    /// the page and whether another follows need.
    pub fn select(
        &self,
        access: &Access,
        filter: &ModuleFilter,
        skip: usize,
        take: usize,
    ) -> Vec<&ModuleSummary> {
        let query = filter.query.as_deref().map(str::to_lowercase);
        let words: Vec<&str> = query
            .as_deref()
            .map(|q| q.split_whitespace().collect())
            .unwrap_or_default();
        let range = match &filter.namespace {
            Some(namespace) => self.namespace_range(namespace.as_str()),
            None => 0..self.modules.len(),
        };
        let within = |i: &usize| range.contains(i);
        let candidates: Box<dyn Iterator<Item = usize>> =
            match query.as_deref().and_then(|q| self.candidates(q)) {
                Some(found) => Box::new(found.into_iter().map(|i| i as usize).filter(within)),
                None => Box::new(range.clone()),
            };
        candidates
            .filter(|i| {
                let summary = &self.modules[*i];
                access.allows(&summary.address.namespace)
                    && filter.selects(summary)
                    && words.iter().all(|w| self.texts[*i].contains(w))
            })
            .skip(skip)
            .take(take)
            .map(|i| &self.modules[i])
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

    /// The meaning search has always had: every word, as a substring, in any case.
    fn by_scanning(c: &Catalogue, q: &str) -> Vec<String> {
        let q = q.to_lowercase();
        c.modules
            .iter()
            .zip(&c.texts)
            .filter(|(_, text)| q.split_whitespace().all(|w| text.contains(w)))
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
                found(&c, &Access::All, &query(q)),
                by_scanning(&c, q),
                "{q}"
            );
        }
        assert_eq!(
            found(&c, &Access::All, &query("subnet")),
            ["acme/network/aws", "beta/subnet-calc/aws"]
        );
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
