//! Answers kept as the bytes sent: a versions list, a download answer or a mirror version is
//! serialised once per change of the document it is made of (and, when it holds download
//! URLs, once per [`UrlWindow`]), then sent as it is, compressed once when a client accepts
//! it. A request costs its access check and one document read; on a store that counts its
//! writes ([`crate::store::MetadataReader::generation`]: the local shape's index) not even
//! the read while nothing changed.
//!
//! A kept answer is tied to the revision of the document it was made from (a random string
//! each write gives: the AWS functions keep the bytes of the revision they last read), to the
//! store's generation when it has one, and to the first second at which time alone changes
//! it (a release whose key expires, a window of URLs that closes). The access check is the
//! caller's, before the answer is asked for: answers hold nothing a token changes.
//!
//! [`UrlWindow`]: crate::downloads::UrlWindow

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use crate::store::StoreError;
use crate::tokens::unix;

/// At most this many answers are kept; past it, all are dropped and made again as asked.
const MAX_ENTRIES: usize = 8192;

/// Bodies shorter than this are sent as they are: compressing them gains less than the
/// header costs.
const COMPRESS_FROM: usize = 1024;

/// One answer's JSON, and its gzip form made the first time a client accepts it.
#[derive(Debug)]
pub struct Answer {
    json: bytes::Bytes,
    gzip: OnceLock<Option<bytes::Bytes>>,
}

impl Answer {
    /// The answer `value` serialises to.
    pub fn of<T: serde::Serialize>(value: &T) -> Result<Self, StoreError> {
        let json = serde_json::to_vec(value)
            .map_err(|e| StoreError::with_source("cannot encode an answer", e))?;
        Ok(Self::from_json(json))
    }

    /// An answer whose JSON is already made.
    pub fn from_json(json: Vec<u8>) -> Self {
        Self {
            json: json.into(),
            gzip: OnceLock::new(),
        }
    }

    /// The JSON, as sent to a client that does not take gzip.
    pub fn json(&self) -> &bytes::Bytes {
        &self.json
    }

    /// The JSON compressed with gzip, when it is long enough for that to pay; made once.
    pub fn gzip(&self) -> Option<&bytes::Bytes> {
        self.gzip
            .get_or_init(|| {
                if self.json.len() < COMPRESS_FROM {
                    return None;
                }
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(self.json.len() / 4),
                    flate2::Compression::default(),
                );
                encoder.write_all(&self.json).ok()?;
                let gzip = encoder.finish().ok()?;
                (gzip.len() < self.json.len()).then(|| gzip.into())
            })
            .as_ref()
    }

    /// The answer read back as a value (for callers that want the value, not the bytes).
    pub fn value<T: serde::de::DeserializeOwned>(&self) -> Result<T, StoreError> {
        serde_json::from_slice(&self.json)
            .map_err(|e| StoreError::with_source("cannot read an answer back", e))
    }
}

/// What an answer was made from, and how long it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    /// The revision of the document read (empty when there was none).
    pub revision: String,
    /// The store's generation, read before the document, when the store has one.
    pub generation: Option<u64>,
    /// The first Unix second at which time alone may change the answer.
    pub until: Option<u64>,
}

impl Basis {
    fn holds_at(&self, now: SystemTime) -> bool {
        self.until.is_none_or(|t| unix(now) < t)
    }
}

struct Entry {
    basis: Basis,
    answer: Arc<Answer>,
}

/// Answers by key (what was asked: the document and the question's other parts), shared
/// by the clones of a registry.
pub struct Answers<K> {
    entries: Mutex<HashMap<K, Entry>>,
}

impl<K> Default for Answers<K> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> Answers<K> {
    /// The answer kept for `key`, if the store has not changed since (its generation is the
    /// same): no read needed.
    pub fn unchanged(
        &self,
        key: &K,
        generation: Option<u64>,
        now: SystemTime,
    ) -> Option<Arc<Answer>> {
        let generation = generation?;
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(key)?;
        (entry.basis.generation == Some(generation) && entry.basis.holds_at(now))
            .then(|| Arc::clone(&entry.answer))
    }

    /// The answer kept for `key` if it was made from `revision` of its document (read at
    /// `generation`, which the entry then takes on).
    pub fn of_revision(
        &self,
        key: &K,
        revision: &str,
        generation: Option<u64>,
        now: SystemTime,
    ) -> Option<Arc<Answer>> {
        let mut entries = self.entries.lock().ok()?;
        let entry = entries.get_mut(key)?;
        if entry.basis.revision != revision || !entry.basis.holds_at(now) {
            return None;
        }
        if generation.is_some() {
            entry.basis.generation = generation;
        }
        Some(Arc::clone(&entry.answer))
    }

    /// Keeps `answer` for `key`, made from what `basis` says.
    pub fn keep(&self, key: &K, basis: Basis, answer: Arc<Answer>) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(key.clone(), Entry { basis, answer });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    fn basis(revision: &str, generation: Option<u64>, until: Option<u64>) -> Basis {
        Basis {
            revision: revision.into(),
            generation,
            until,
        }
    }

    #[test]
    fn an_answer_holds_for_its_revision_its_generation_and_until_its_time() {
        let answers: Answers<&str> = Answers::default();
        let answer = Arc::new(Answer::from_json(b"{}".to_vec()));
        answers.keep(&"a", basis("r1", Some(7), Some(100)), Arc::clone(&answer));
        assert!(answers.unchanged(&"a", Some(7), at(99)).is_some());
        assert!(
            answers.unchanged(&"a", Some(7), at(100)).is_none(),
            "time alone ends it"
        );
        assert!(
            answers.unchanged(&"a", Some(8), at(1)).is_none(),
            "the store changed"
        );
        assert!(
            answers.unchanged(&"a", None, at(1)).is_none(),
            "no generation: read"
        );
        // The store changed elsewhere, the document did not: the answer holds, at the new
        // generation from then on.
        assert!(answers.of_revision(&"a", "r1", Some(8), at(1)).is_some());
        assert!(answers.unchanged(&"a", Some(8), at(1)).is_some());
        assert!(answers.of_revision(&"a", "r2", Some(9), at(1)).is_none());
        assert!(answers.of_revision(&"b", "r1", Some(8), at(1)).is_none());
    }

    #[test]
    fn long_answers_are_compressed_once_short_ones_never() {
        let short = Answer::from_json(b"{\"versions\":[]}".to_vec());
        assert!(short.gzip().is_none());
        let long_json = serde_json::to_vec(&vec!["1.0.0"; 500]).unwrap();
        let long = Answer::from_json(long_json.clone());
        let gzip = long.gzip().expect("a long answer compresses").clone();
        assert!(gzip.len() < long_json.len() / 4);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzip[..]), &mut back)
            .unwrap();
        assert_eq!(back, long_json);
        assert_eq!(long.gzip().unwrap().as_ptr(), gzip.as_ptr(), "made once");
        let value: Vec<String> = long.value().unwrap();
        assert_eq!(value.len(), 500);
    }
}
