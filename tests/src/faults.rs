//! Faults injected by the proxy in front of moto ([`crate::counting`]): per function, service
//! and operation, a rate of throttles, 500 and 503 answers, delays past the SDK's attempt
//! timeout and "applied but the answer lost". Each call's fate is a hash of the plan's seed
//! and the call itself (never its arrival order), so a failing run replays from its seed.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use sha2::{Digest, Sha256};

/// What the proxy does to a call instead of (or after) forwarding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// DynamoDB: 400 `ProvisionedThroughputExceededException` or `ThrottlingException`;
    /// S3: 503 `SlowDown`. Never forwarded.
    Throttle,
    /// 500 `InternalServerError` (S3: `InternalError`). Never forwarded.
    ServerError,
    /// 503 `ServiceUnavailable`. Never forwarded.
    Unavailable,
    /// Held past the client's attempt timeout ([`FaultPlan::hold`]), then answered 503,
    /// never forwarded.
    Delay,
    /// Forwarded (the write lands), then the answer is withheld past the client's attempt
    /// timeout and replaced by a 503.
    LostAnswer,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 5] = [
        FaultKind::Throttle,
        FaultKind::ServerError,
        FaultKind::Unavailable,
        FaultKind::Delay,
        FaultKind::LostAnswer,
    ];
}

/// Which calls a fault hits, how often, and how many times at most.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// `dynamodb` or `s3`; any when `None`.
    pub service: Option<&'static str>,
    /// A DynamoDB operation (`PutItem`) or an S3 HTTP method (`PUT`; `COPY` for a PUT with
    /// `x-amz-copy-source`); several separated by `|` (`GetItem|Query`); any when `None`.
    pub action: Option<String>,
    /// The function making the call (`indexer`, `modules`); any when `None`.
    pub function: Option<String>,
    /// The share of matching calls hit, 0.0 to 1.0.
    pub rate: f64,
    /// The fault.
    pub kind: FaultKind,
    /// Inject at most this many (the next N matching calls, with rate 1.0).
    pub limit: Option<u64>,
}

impl FaultRule {
    /// `kind` on `rate` of every call; narrow it with the builder methods.
    pub fn new(kind: FaultKind, rate: f64) -> FaultRule {
        FaultRule {
            service: None,
            action: None,
            function: None,
            rate,
            kind,
            limit: None,
        }
    }

    /// `kind` on each of the next `n` matching calls.
    pub fn next(n: u64, kind: FaultKind) -> FaultRule {
        FaultRule::new(kind, 1.0).limit(n)
    }

    /// Only calls to `service` (`dynamodb`, `s3`).
    pub fn service(mut self, service: &'static str) -> FaultRule {
        self.service = Some(service);
        self
    }

    /// Only these operations or methods (`GetItem|Query`, `PUT|COPY`).
    pub fn action(mut self, action: &str) -> FaultRule {
        self.action = Some(action.to_owned());
        self
    }

    /// Only calls of `function`.
    pub fn function(mut self, function: &str) -> FaultRule {
        self.function = Some(function.to_owned());
        self
    }

    /// At most `n` injections.
    pub fn limit(mut self, n: u64) -> FaultRule {
        self.limit = Some(n);
        self
    }

    /// True if the rule covers this call (`method` and `copy` for S3).
    fn matches(&self, call: &CallId<'_>) -> bool {
        let action_ok = self.action.as_deref().is_none_or(|wanted| {
            wanted.split('|').any(|a| match call.service {
                "dynamodb" => a == call.operation,
                // A copy is a PUT too: `PUT` takes both.
                _ => (a == "COPY" && call.copy) || a == call.operation,
            })
        });
        self.service.is_none_or(|s| s == call.service)
            && self.function.as_deref().is_none_or(|f| f == call.function)
            && action_ok
    }
}

/// Which faults to inject: rules, and the seed every call's fate derives from.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    /// The seed; the same seed and the same calls give the same faults.
    pub seed: u64,
    /// The rules, in order: a call draws one number and the matching rules (past their
    /// limit ones left out) take consecutive slices of it, `rate` wide each.
    pub rules: Vec<FaultRule>,
    /// How long a [`FaultKind::Delay`] or a [`FaultKind::LostAnswer`] holds its answer: set
    /// it past the functions' attempt timeout (`TFREG_AWS_ATTEMPT_TIMEOUT_MS`).
    pub hold: Duration,
}

impl FaultPlan {
    /// No rules yet, holding for four seconds.
    pub fn new(seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            rules: Vec::new(),
            hold: Duration::from_secs(4),
        }
    }

    /// `rate` of every call faulted, spread evenly over every kind.
    pub fn uniform(seed: u64, rate: f64) -> FaultPlan {
        let share = rate / FaultKind::ALL.len() as f64;
        FaultKind::ALL
            .into_iter()
            .fold(FaultPlan::new(seed), |plan, kind| {
                plan.rule(FaultRule::new(kind, share))
            })
    }

    /// With one more rule.
    pub fn rule(mut self, rule: FaultRule) -> FaultPlan {
        self.rules.push(rule);
        self
    }

    /// Holding delayed and lost answers this long.
    pub fn holding(mut self, hold: Duration) -> FaultPlan {
        self.hold = hold;
        self
    }
}

/// What the proxy saw and did, since the stack started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Calls that reached the proxy (presigned downloads aside).
    pub calls: u64,
    /// Faults injected, by kind.
    pub injected: std::collections::BTreeMap<FaultKind, u64>,
    /// Function processes killed by a [`CrashPoint`].
    pub crashes: u64,
}

impl FaultStats {
    /// Faults of `kind` injected.
    pub fn of(&self, kind: FaultKind) -> u64 {
        self.injected.get(&kind).copied().unwrap_or(0)
    }

    /// Faults injected, every kind.
    pub fn total(&self) -> u64 {
        self.injected.values().sum()
    }
}

/// Where the indexer is killed: at its `nth` (1 for the next) call of `action` on `service`
/// counted from when the point is set, and again at every `nth` after for `times` crashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPoint {
    /// `dynamodb` or `s3`.
    pub service: &'static str,
    /// As [`FaultRule::action`] has it (`TransactWriteItems`, `PUT|COPY`).
    pub action: String,
    /// Which matching call, from 1.
    pub nth: u64,
    /// How many crashes (each at the `nth` matching call after the last one); 1 by
    /// [`CrashPoint::new`].
    pub times: u64,
}

impl CrashPoint {
    /// One crash at the `nth` matching call.
    pub fn new(service: &'static str, action: &str, nth: u64) -> CrashPoint {
        CrashPoint {
            service,
            action: action.to_owned(),
            nth,
            times: 1,
        }
    }

    /// `times` crashes.
    pub fn times(mut self, times: u64) -> CrashPoint {
        self.times = times;
        self
    }
}

/// One call as fault rules see it.
pub(crate) struct CallId<'a> {
    pub function: &'a str,
    pub service: &'static str,
    /// The DynamoDB operation or the S3 method.
    pub operation: &'a str,
    /// The call's full action (`PUT /bucket/key`), part of its identity.
    pub action: &'a str,
    /// An S3 copy (`x-amz-copy-source`).
    pub copy: bool,
    pub body: &'a [u8],
}

/// A fault decided for one call.
pub(crate) struct Decision {
    pub kind: FaultKind,
    /// Its identity in the log: the hash the fate was drawn from.
    pub id: String,
    pub hold: Duration,
}

#[derive(Default)]
struct State {
    plan: Option<FaultPlan>,
    injected_by_rule: Vec<u64>,
    /// How many times each call identity was seen, so a retry draws again.
    seen: HashMap<[u8; 32], u64>,
    stats: FaultStats,
    crash: Option<(CrashPoint, u64)>,
}

/// The proxy's fault state, shared by its listeners.
#[derive(Default)]
pub(crate) struct Faults {
    state: Mutex<State>,
    log: Option<PathBuf>,
}

impl Faults {
    /// Faults logged (one line each) to `log`.
    pub fn new(log: Option<PathBuf>) -> Faults {
        Faults {
            state: Mutex::default(),
            log,
        }
    }

    /// Replaces the plan (`None`: no more faults); limits count afresh.
    pub fn set(&self, plan: Option<FaultPlan>) {
        let mut state = self.state.lock().unwrap();
        state.injected_by_rule = vec![0; plan.as_ref().map_or(0, |p| p.rules.len())];
        self.write_log(&format!("plan {plan:?}"));
        state.plan = plan;
    }

    /// Arms a crash point.
    pub fn set_crash(&self, point: Option<CrashPoint>) {
        self.state.lock().unwrap().crash = point.map(|p| (p, 0));
    }

    pub fn stats(&self) -> FaultStats {
        self.state.lock().unwrap().stats.clone()
    }

    /// True if this call of the indexer is where it crashes (and counts the crash).
    pub fn crashes_at(&self, call: &CallId<'_>) -> bool {
        let mut state = self.state.lock().unwrap();
        let Some((point, seen)) = &mut state.crash else {
            return false;
        };
        let rule = FaultRule::new(FaultKind::ServerError, 1.0)
            .service(point.service)
            .action(&point.action)
            .function("indexer");
        if !rule.matches(call) {
            return false;
        }
        *seen += 1;
        if *seen < point.nth {
            return false;
        }
        *seen = 0;
        point.times -= 1;
        if point.times == 0 {
            state.crash = None;
        }
        state.stats.crashes += 1;
        drop(state);
        self.write_log(&format!(
            "crash function={} service={} action={}",
            call.function, call.service, call.action
        ));
        true
    }

    /// Counts the call, and decides its fault if any.
    pub fn decide(&self, call: &CallId<'_>) -> Option<Decision> {
        let mut state = self.state.lock().unwrap();
        state.stats.calls += 1;
        let plan = state.plan.clone()?;
        let identity = Sha256::new()
            .chain_update(call.function)
            .chain_update([0])
            .chain_update(call.service)
            .chain_update([0])
            .chain_update(call.action)
            .chain_update([0])
            .chain_update(Sha256::digest(call.body))
            .finalize();
        let seen = state.seen.entry(identity.into()).or_insert(0);
        let repeat = *seen;
        *seen += 1;
        let fate = Sha256::new()
            .chain_update(plan.seed.to_le_bytes())
            .chain_update(identity)
            .chain_update(repeat.to_le_bytes())
            .finalize();
        let draw = u64::from_le_bytes(fate[..8].try_into().unwrap()) as f64 / 2f64.powi(64);
        let mut upto = 0.0;
        for (i, rule) in plan.rules.iter().enumerate() {
            let spent = rule.limit.is_some_and(|l| state.injected_by_rule[i] >= l);
            if spent || !rule.matches(call) {
                continue;
            }
            upto += rule.rate;
            if draw < upto {
                state.injected_by_rule[i] += 1;
                *state.stats.injected.entry(rule.kind).or_insert(0) += 1;
                drop(state);
                let id = hex::encode(&fate[..8]);
                self.write_log(&format!(
                    "fault seed={} id={id} function={} service={} action={} repeat={repeat} kind={:?}",
                    plan.seed, call.function, call.service, call.action, rule.kind
                ));
                return Some(Decision {
                    kind: rule.kind,
                    id,
                    hold: plan.hold,
                });
            }
        }
        None
    }

    fn write_log(&self, line: &str) {
        let Some(path) = &self.log else { return };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        if let Ok(mut file) = file {
            let _ = writeln!(file, "{line}");
        }
    }
}

/// The error answer AWS gives for `kind` (a [`FaultKind::Delay`] or
/// [`FaultKind::LostAnswer`] ends as a 503 once held), with `id` as its request id.
pub(crate) fn error_answer(kind: FaultKind, service: &str, head: bool, id: &str) -> Response {
    let (status, code) = match (service, kind) {
        ("dynamodb", FaultKind::Throttle) => match id.as_bytes()[0] % 2 {
            0 => (400, "ProvisionedThroughputExceededException"),
            _ => (400, "ThrottlingException"),
        },
        ("dynamodb", FaultKind::ServerError) => (500, "InternalServerError"),
        ("dynamodb", _) => (503, "ServiceUnavailable"),
        (_, FaultKind::Throttle) => (503, "SlowDown"),
        (_, FaultKind::ServerError) => (500, "InternalError"),
        (_, _) => (503, "ServiceUnavailable"),
    };
    let message = format!("injected by the test harness's fault proxy ({id})");
    let (content_type, body) = match service {
        "dynamodb" => (
            "application/x-amz-json-1.0",
            serde_json::json!({
                "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
                "message": message,
            })
            .to_string(),
        ),
        _ => (
            "application/xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>{id}</RequestId></Error>"
            ),
        ),
    };
    let body = if head { String::new() } else { body };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("x-amzn-requestid", id)
        .header("x-amz-request-id", id)
        .body(Body::from(body))
        .unwrap()
}
