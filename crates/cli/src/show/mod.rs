//! `tfreg show ADDRESS[@VERSION]`: one published version as the registry serves it. Three
//! parts (`NS/NAME/SYSTEM`) name a module ([`module`]), two (`NS/TYPE`) a provider
//! ([`provider`]). Reads a data directory (indexed first, as `tfreg status` does) or the AWS
//! shape's table.

mod module;
mod provider;

use std::process::ExitCode;

use clap::Args;

use crate::address::Named;
use crate::backend::RegistryArgs;

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// NAMESPACE/NAME/SYSTEM for a module, NAMESPACE/TYPE for a provider, optionally
    /// @VERSION (`acme/network/aws@1.2.0`, `acme/widgets@2.0.0`).
    address: String,
    /// Print the version as JSON. A module: `address`, `version`, `published_at`, `source`,
    /// `description` and `docs`. A provider: the read API's details document (`version`,
    /// `protocols`, `platforms`, `key_id`, `versions`, ...).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let shown = Named::parse(&args.address)?;
    let backend = args.registry.backend()?;
    let registry = backend.open_indexed(None).await?.registry;
    match shown {
        Named::Module(address, version) => {
            module::show(&registry, &address, version, args.json).await?
        }
        Named::Provider(address, version) => {
            provider::show(&registry, &address, version.as_ref(), args.json).await?
        }
    }
    Ok(ExitCode::SUCCESS)
}
