//! How patient each function's AWS SDK clients are: the [`Budget`] its kind gets (the
//! functions behind API Gateway answer within their 10 s; the event-driven ones wait out a
//! throttle), and the two settings that override it, checked at the cold start:
//! `TFREG_AWS_ATTEMPT_TIMEOUT_MS` (one try's timeout) and `TFREG_AWS_MAX_ATTEMPTS`.

use std::time::Duration;

use tfreg_aws::config::Budget;

use crate::config::{ConfigError, Lookup};
use crate::Function;

/// One try's timeout, in milliseconds.
pub const ATTEMPT_TIMEOUT_MS: &str = "TFREG_AWS_ATTEMPT_TIMEOUT_MS";
/// Tries of one call, the first included.
pub const MAX_ATTEMPTS: &str = "TFREG_AWS_MAX_ATTEMPTS";

/// The bounds of [`ATTEMPT_TIMEOUT_MS`]: below, no call to AWS completes; above, a request
/// function's call outlasts its Lambda timeout many times over.
const ATTEMPT_TIMEOUT_RANGE: (u64, u64) = (100, 300_000);
/// The bounds of [`MAX_ATTEMPTS`].
const MAX_ATTEMPTS_RANGE: (u32, u32) = (1, 20);

/// The budget a function's kind gets before its settings: the one place it is chosen.
/// `None` for the discovery function, which calls no AWS service.
pub fn default_budget(function: Function) -> Option<Budget> {
    match function {
        Function::Discovery => None,
        Function::Modules
        | Function::Providers
        | Function::Mirror
        | Function::Downloads
        | Function::Web
        | Function::Login => Some(Budget::REQUESTS),
        Function::Indexer | Function::Fetcher | Function::Usage => Some(Budget::EVENTS),
    }
}

/// `function`'s budget with the overrides `get` gives, or the setting at fault.
pub fn budget(function: Function, get: Lookup<'_>) -> Result<Budget, ConfigError> {
    let mut budget = default_budget(function).unwrap_or(Budget::REQUESTS);
    if let Some(ms) = number::<u64>(get, ATTEMPT_TIMEOUT_MS, ATTEMPT_TIMEOUT_RANGE)? {
        budget.attempt_timeout = Duration::from_millis(ms);
    }
    if let Some(n) = number::<u32>(get, MAX_ATTEMPTS, MAX_ATTEMPTS_RANGE)? {
        budget.max_attempts = n;
    }
    Ok(budget)
}

/// The whole number `variable` holds within `range`, if set.
fn number<T>(get: Lookup<'_>, variable: &str, range: (T, T)) -> Result<Option<T>, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let Some(value) = get(variable).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let (low, high) = range;
    let problem = || format!("{value:?} must be a whole number from {low} to {high}");
    let n: T = value
        .trim()
        .parse()
        .map_err(|_| ConfigError::new(variable, problem()))?;
    if n < low || n > high {
        return Err(ConfigError::new(variable, problem()));
    }
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn budget_with(function: Function, vars: &[(&str, &str)]) -> Result<Budget, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        budget(function, &|name| vars.get(name).cloned())
    }

    #[test]
    fn each_kind_of_function_gets_its_budget() {
        for function in Function::ALL {
            let expected = match function.spec().family {
                // Every function behind API Gateway answers within its Lambda timeout.
                Some(_) => Budget::REQUESTS,
                None => Budget::EVENTS,
            };
            if function == Function::Discovery {
                assert_eq!(default_budget(function), None);
                continue;
            }
            assert_eq!(
                budget_with(function, &[]).unwrap(),
                expected,
                "{function:?}"
            );
        }
    }

    #[test]
    fn the_settings_override_the_attempts_and_the_attempt_timeout() {
        let budget = budget_with(
            Function::Indexer,
            &[(ATTEMPT_TIMEOUT_MS, "1500"), (MAX_ATTEMPTS, " 4 ")],
        )
        .unwrap();
        assert_eq!(budget.attempt_timeout, Duration::from_millis(1500));
        assert_eq!(budget.max_attempts, 4);
        assert_eq!(budget.max_backoff, Budget::EVENTS.max_backoff);
        // Empty is unset.
        let unset = budget_with(Function::Modules, &[(MAX_ATTEMPTS, "")]).unwrap();
        assert_eq!(unset, Budget::REQUESTS);
    }

    #[test]
    fn a_bad_setting_stops_the_cold_start_naming_it() {
        for (variable, value) in [
            (ATTEMPT_TIMEOUT_MS, "2s"),
            (ATTEMPT_TIMEOUT_MS, "10"),
            (ATTEMPT_TIMEOUT_MS, "-5"),
            (MAX_ATTEMPTS, "0"),
            (MAX_ATTEMPTS, "many"),
            (MAX_ATTEMPTS, "21"),
        ] {
            let error = budget_with(Function::Modules, &[(variable, value)]).unwrap_err();
            assert_eq!(error.variable, variable);
            assert!(
                error.problem.contains("must be a whole number from"),
                "{error}"
            );
            assert!(error
                .to_string()
                .starts_with(&format!("configuration: {variable}: ")));
        }
    }
}
