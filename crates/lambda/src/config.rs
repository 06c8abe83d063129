//! How a function reads its settings from the environment: through the same flags the
//! `tfreg` command line takes (`tfreg_aws::settings`), so each setting is parsed and checked
//! once for both. A missing or bad setting becomes a [`ConfigError`] that names its
//! environment variable, in words a person reads in the Lambda console. What each function
//! reads is its own settings type ([`crate::settings`]).

use clap::Parser;

/// A setting that is missing or wrong, by its environment variable.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable}: {problem}")]
pub struct ConfigError {
    /// The environment variable at fault (`configuration` when none can be named).
    pub variable: String,
    /// What is wrong with it, in words (never a secret's value).
    pub problem: String,
}

impl ConfigError {
    pub(crate) fn new(variable: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError {
            variable: variable.to_owned(),
            problem: problem.into(),
        }
    }
}

/// Where settings come from: a variable's value by its name (the process environment at a
/// cold start; a map in tests).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A function's settings: parsed from its flags (`Flags`, a clap parser whose every argument
/// has an environment variable), then checked into the values its family reads.
pub trait FunctionSettings: Sized {
    /// The flags, as `tfreg` has them; their `env` names are the function's variables.
    type Flags: Parser;

    /// The checked settings, or the setting at fault.
    fn from_flags(flags: Self::Flags) -> Result<Self, ConfigError>;

    /// Reads the settings through `get` (and nothing else).
    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::from_flags(parse::<Self::Flags>(&get)?)
    }

    /// Reads the settings from the process environment.
    fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The environment variables the function reads.
    fn environment() -> Vec<String> {
        <Self::Flags as clap::CommandFactory>::command()
            .get_arguments()
            .filter_map(|a| a.get_env().map(|e| e.to_string_lossy().into_owned()))
            .collect()
    }
}

/// Parses `T` from the values `get` gives its settings' environment variables (and from
/// nothing else: the process environment is read only through `get`).
fn parse<T: Parser>(get: Lookup<'_>) -> Result<T, ConfigError> {
    let command = T::command();
    let mut env_of_flag = Vec::new();
    let mut argv = vec!["tfreg-function".to_owned()];
    for arg in command.get_arguments() {
        let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let env = env.to_string_lossy().into_owned();
        if let Some(value) = get(&env).filter(|v| !v.trim().is_empty()) {
            argv.push(format!("--{long}={value}"));
        }
        env_of_flag.push((format!("--{long}"), env));
    }
    let command = command.mut_args(|arg| arg.env(None));
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| readable(&e, &env_of_flag))?;
    T::from_arg_matches(&matches).map_err(|e| readable(&e, &env_of_flag))
}

/// A clap error in the words of environment variables: `TFREG_URL_TTL: invalid value
/// "2h": must be between 10s and 1h`.
fn readable(error: &clap::Error, env_of_flag: &[(String, String)]) -> ConfigError {
    use clap::error::{ContextKind, ContextValue};
    let flag = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(flag)) => flag.split([' ', '=']).next().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    let variable = env_of_flag
        .iter()
        .find(|(f, _)| *f == flag)
        .map_or_else(|| "configuration".to_owned(), |(_, env)| env.clone());
    let value = match error.get(ContextKind::InvalidValue) {
        // A secret is never repeated, not even a wrong one: it reaches the console's log.
        Some(ContextValue::String(_)) if variable.contains("SECRET") => String::new(),
        // A document is long, and its error names the field at fault.
        Some(ContextValue::String(_)) if variable == "TFREG_IDENTITY" => String::new(),
        Some(ContextValue::String(value)) => format!("{value:?} "),
        _ => String::new(),
    };
    let reason = match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => match error.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => format!("is not one of {}", valid.join(", ")),
            _ => error
                .kind()
                .as_str()
                .unwrap_or("is not valid")
                .to_lowercase(),
        },
    };
    ConfigError {
        variable,
        problem: format!("{value}{reason}").trim().to_owned(),
    }
}

pub(crate) fn required(variable: &str, value: Option<String>) -> Result<String, ConfigError> {
    value.ok_or_else(|| ConfigError::new(variable, "is not set"))
}
