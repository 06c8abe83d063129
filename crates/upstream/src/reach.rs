//! Where the registry may connect on an upstream's word. An upstream's answers name URLs
//! (release files, packages, redirects); followed blindly, they would make the registry
//! connect to its own network on a token holder's request. Every hop that is not the
//! configured upstream's own origin must resolve to public addresses only, or to addresses
//! the operator allowed (`--upstream-allow-address`); names are checked on the address they
//! resolve to, by the resolver the connection then uses, so no second lookup can differ.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;

/// The operator's allowed networks beside the public internet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    allowed: Vec<IpNet>,
}

/// What a refused hop is told, whatever refused it: a fixed text, so that an answer
/// reveals nothing of what is on the registry's network.
pub const REFUSED: &str = "an address in its answers is not one the registry fetches from \
     (only the upstream's own origin, public addresses and those --upstream-allow-address \
     names are)";

/// The resolver's refusal, recognised in an error's source chain.
#[derive(Debug, thiserror::Error)]
#[error("{REFUSED}")]
pub struct Refused;

impl Reach {
    /// The networks `values` name: CIDRs (`10.20.0.0/16`, `fd00::/8`) or single addresses.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Reach, String> {
        let mut allowed = Vec::new();
        for value in values {
            let value = value.as_ref().trim();
            if value.is_empty() {
                continue;
            }
            let net = match value.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => value
                    .parse::<IpAddr>()
                    .map(IpNet::from)
                    .map_err(|_| format!("{value:?} is not an address or a CIDR (10.20.0.0/16)"))?,
            };
            allowed.push(net.trunc());
        }
        Ok(Reach { allowed })
    }

    /// True when the registry may connect to `ip` for a hop that is not the upstream's own
    /// origin: a public address, or one the operator allowed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        is_public(ip) || self.allowed.iter().any(|net| net.contains(&ip))
    }

    /// A resolver for `reqwest` that keeps only the addresses [`Reach::allows`], and fails
    /// with [`Refused`] when none is left.
    pub fn resolver(&self) -> Arc<Resolver> {
        Arc::new(Resolver {
            reach: self.clone(),
        })
    }
}

/// The resolver of hops away from the upstream's own origin.
pub struct Resolver {
    reach: Reach,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let reach = self.reach.clone();
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> =
                found.into_iter().filter(|a| reach.allows(a.ip())).collect();
            if kept.is_empty() {
                return Err(Box::new(Refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// An IPv4 address carried in IPv6 (`::ffff:127.0.0.1`) as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

/// True for addresses of the public internet: not loopback, link-local, private, unique
/// local, shared (CGNAT), unspecified, multicast, broadcast, documentation or reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the IPv4 address it embeds.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let o = ip.octets();
        return public_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || s[0..6] == [0, 0, 0, 0, 0, 0]
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] == 0x2001 && s[1] == 0x0db8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_reached_unless_allowed() {
        let none = Reach::default();
        for private in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fc12::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(!none.allows(ip), "{private} is reached");
        }
        for public in [
            "1.1.1.1",
            "151.101.1.69",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(none.allows(ip), "{public} is not reached");
        }
        let some = Reach::parse(&["10.20.0.0/16", "127.0.0.1", " fd00::/8 ", ""]).unwrap();
        for allowed in ["10.20.3.4", "127.0.0.1", "::ffff:127.0.0.1", "fd12::1"] {
            assert!(some.allows(allowed.parse().unwrap()), "{allowed}");
        }
        for still_not in ["10.21.0.1", "127.0.0.2", "fc00::1"] {
            assert!(!some.allows(still_not.parse().unwrap()), "{still_not}");
        }
        let e = Reach::parse(&["10.0.0.0/33"]).unwrap_err();
        assert!(e.contains("CIDR"), "{e}");
        assert!(Reach::parse(&["intranet"]).is_err());
    }
}
