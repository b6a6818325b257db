//! The simulated clouds: an EC2 "instance" or a Nova "server" is derived from the object's uid, so the same object
//! always gets the same instance ID, private address and host name, and nothing is stored
//! anywhere but in the objects themselves.

use serde_json::{Value, json};

/// Where instances run when their spec names no zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cloud {
    /// The availability zone, e.g. `us-east-1a`.
    pub zone: String,
}

impl Default for Cloud {
    fn default() -> Self {
        Self {
            zone: "us-east-1a".to_owned(),
        }
    }
}

/// One simulated EC2 instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Instance {
    /// `i-0` and 16 hex digits.
    pub id: String,
    /// The availability zone.
    pub zone: String,
    /// `10.x.y.z`.
    pub private_ip: String,
}

impl Instance {
    /// The instance of the object with `uid`, in `zone`.
    pub fn for_uid(uid: &str, zone: &str) -> Self {
        let hash = fnv1a64(uid.as_bytes());
        let [_, _, _, _, _, a, b, c] = hash.to_be_bytes();
        Self {
            id: format!("i-0{hash:016x}"),
            zone: zone.to_owned(),
            private_ip: format!("10.{a}.{b}.{}", c.max(1)),
        }
    }

    /// `aws:///<zone>/<instance id>`, the form both AWS providers write.
    pub fn provider_id(&self) -> String {
        format!("aws:///{}/{}", self.zone, self.id)
    }

    /// The region: the zone without its letter.
    pub fn region(&self) -> &str {
        self.zone.trim_end_matches(|c: char| c.is_ascii_alphabetic())
    }

    /// The EC2 private DNS name, which is also the Node's name.
    pub fn host_name(&self) -> String {
        let dashed = self.private_ip.replace('.', "-");
        match self.region() {
            "us-east-1" => format!("ip-{dashed}.ec2.internal"),
            region => format!("ip-{dashed}.{region}.compute.internal"),
        }
    }

    /// The addresses both APIs report (`InternalIP`, `InternalDNS`, `Hostname`).
    pub fn addresses(&self) -> Value {
        json!([
            {"type": "InternalIP", "address": self.private_ip},
            {"type": "InternalDNS", "address": self.host_name()},
            {"type": "Hostname", "address": self.host_name()},
        ])
    }
}

/// One simulated OpenStack (Nova) server: its ID a UUID derived from the object's uid,
/// its name the object's (both OpenStack providers name a server after its machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Server {
    /// A UUID, e.g. `6f1c…-…`.
    pub id: String,
    /// The server (and Node) name.
    pub name: String,
    /// `10.x.y.z` on the cluster's network.
    pub private_ip: String,
}

impl Server {
    /// The server of the object with `uid`, named `name`.
    pub fn for_uid(uid: &str, name: &str) -> Self {
        let high = fnv1a64(uid.as_bytes());
        let low = fnv1a64(format!("{uid}/server").as_bytes());
        let [_, _, _, _, _, a, b, c] = high.to_be_bytes();
        let hex = format!("{high:016x}{low:016x}");
        Self {
            id: format!(
                "{}-{}-{}-{}-{}",
                &hex[0..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..32]
            ),
            name: name.to_owned(),
            private_ip: format!("10.{a}.{b}.{}", c.max(1)),
        }
    }

    /// The server a providerID `openstack:///<uuid>` names (else the uid's own).
    pub fn with_provider_id(provider_id: &str, uid: &str, name: &str) -> Self {
        let mut server = Self::for_uid(uid, name);
        if let Some(id) = server_of_provider_id(provider_id) {
            id.clone_into(&mut server.id);
        }
        server
    }

    /// `openstack:///<server uuid>`, the form both OpenStack providers write.
    pub fn provider_id(&self) -> String {
        format!("openstack:///{}", self.id)
    }

    /// The addresses both APIs report: the fixed IP, and the server name as the host
    /// name (what the Node registers as).
    pub fn addresses(&self) -> Value {
        json!([
            {"type": "InternalIP", "address": self.private_ip},
            {"type": "InternalDNS", "address": self.name},
            {"type": "Hostname", "address": self.name},
        ])
    }
}

/// The server UUID of a provider ID `openstack:///<uuid>`.
pub(super) fn server_of_provider_id(provider_id: &str) -> Option<&str> {
    provider_id
        .strip_prefix("openstack:///")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The zone an instance ID runs in, from a provider ID `aws:///<zone>/<id>`.
pub(super) fn zone_of_provider_id(provider_id: &str) -> Option<&str> {
    let rest = provider_id.strip_prefix("aws:///")?;
    let (zone, _) = rest.split_once('/')?;
    (!zone.is_empty()).then_some(zone)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_uid_is_the_same_instance() {
        let a = Instance::for_uid("5b1f", "eu-west-1b");
        assert_eq!(a, Instance::for_uid("5b1f", "eu-west-1b"));
        assert_ne!(a.id, Instance::for_uid("5b20", "eu-west-1b").id);
        assert_eq!(a.id.len(), 19);
        assert!(a.id.starts_with("i-0"));
    }

    #[test]
    fn provider_id_region_and_host_name_follow_aws() {
        let instance = Instance::for_uid("x", "eu-west-1b");
        assert_eq!(
            instance.provider_id(),
            format!("aws:///eu-west-1b/{}", instance.id)
        );
        assert_eq!(instance.region(), "eu-west-1");
        assert!(instance.host_name().ends_with(".eu-west-1.compute.internal"));
        assert!(
            Instance::for_uid("x", "us-east-1a")
                .host_name()
                .ends_with(".ec2.internal")
        );
        assert_eq!(zone_of_provider_id(&instance.provider_id()), Some("eu-west-1b"));
        assert_eq!(zone_of_provider_id("gce://p/z/n"), None);
    }

    #[test]
    fn a_server_is_a_uuid_named_after_its_machine() {
        let server = Server::for_uid("5b1f", "worker-1");
        assert_eq!(server, Server::for_uid("5b1f", "worker-1"));
        let groups: Vec<usize> = server.id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert_eq!(server.provider_id(), format!("openstack:///{}", server.id));
        assert_eq!(
            server_of_provider_id(&server.provider_id()),
            Some(server.id.as_str())
        );
        let named = Server::with_provider_id("openstack:///abc", "5b1f", "worker-1");
        assert_eq!(named.id, "abc");
        assert_eq!(server_of_provider_id("aws:///z/i-0"), None);
        assert_eq!(server.addresses()[1]["address"], "worker-1");
    }
}
