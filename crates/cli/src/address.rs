//! What a command names on its command line: a module (`NS/NAME/SYSTEM`) or a provider
//! (`NS/TYPE`), optionally `@VERSION`.

use anyhow::bail;
use tfreg_core::{ModuleAddress, ProviderAddress, Version};

/// A module or a provider, and maybe one of its versions.
#[derive(Debug)]
pub enum Named {
    Module(ModuleAddress, Option<Version>),
    Provider(ProviderAddress, Option<Version>),
}

impl Named {
    /// Three parts name a module, two a provider; `@VERSION` names a version.
    pub fn parse(text: &str) -> anyhow::Result<Named> {
        let (address, version) = match text.split_once('@') {
            Some((address, version)) => (address, Some(Version::parse(version)?)),
            None => (text, None),
        };
        let parts: Vec<&str> = address.split('/').collect();
        Ok(match parts.as_slice() {
            [namespace, name, system] => {
                Named::Module(ModuleAddress::parse(namespace, name, system)?, version)
            }
            [namespace, type_] => {
                Named::Provider(ProviderAddress::parse(namespace, type_)?, version)
            }
            _ => bail!(
                "{address:?} is neither a module (NAMESPACE/NAME/SYSTEM) nor a provider (NAMESPACE/TYPE)"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Named;

    #[test]
    fn three_parts_name_a_module_and_two_a_provider() {
        let Named::Module(address, version) = Named::parse("acme/network/aws@1.2.0-rc.1").unwrap()
        else {
            panic!("a module");
        };
        assert_eq!(address.to_string(), "acme/network/aws");
        assert_eq!(version.unwrap().to_string(), "1.2.0-rc.1");
        let Named::Provider(address, version) = Named::parse("Acme/widgets").unwrap() else {
            panic!("a provider");
        };
        assert_eq!(address.to_string(), "acme/widgets");
        assert!(version.is_none());
        assert!(Named::parse("acme").is_err());
        assert!(Named::parse("a/b/c/d").is_err());
        assert!(Named::parse("acme/network/aws@v1").is_err());
        assert!(Named::parse("acme/widgets@1.0").is_err());
    }
}
