//! `OpenStackMachine.spec.ports` → the providerSpec's `networks` and `ports`.
//!
//! A port on a network found by query, or on no network but a subnet, can only be a
//! Machine API network; any other port is a Machine API port (which names its network
//! and subnets by UUID). This is the split OpenShift's conversion makes.

use std::collections::BTreeMap;

use crate::errors::{FieldError, FieldPath, Report};
use crate::openstack::capo::openstackmachines::{
    OpenStackMachinePorts, OpenStackMachinePortsFixedIPsSubnetFilter, OpenStackMachinePortsProfile,
};
use crate::openstack::provider::{
    AddressPair, Filter, FixedIps, NetworkParam, PortOpts, SubnetFilter, SubnetParam,
};

/// `(networks, ports)` of the ports at `path`.
pub(super) fn split(
    ports: &[OpenStackMachinePorts],
    path: &FieldPath,
    report: &mut Report,
) -> (Vec<NetworkParam>, Vec<PortOpts>) {
    let mut networks = Vec::new();
    let mut mapi_ports = Vec::new();
    for (index, port) in ports.iter().enumerate() {
        let path = path.index(index);
        let by_query = port.network.as_ref().is_some_and(|n| n.filter.is_some());
        let first_subnet = port
            .fixed_i_ps
            .iter()
            .flatten()
            .next()
            .is_some_and(|ip| ip.subnet.is_some());
        if by_query || (port.network.is_none() && first_subnet) {
            networks.push(network(port, &path, report));
        } else {
            mapi_ports.push(mapi_port(port, &path, report));
        }
    }
    (networks, mapi_ports)
}

/// A port as a Machine API network: the fields a network has no place for are errors.
fn network(port: &OpenStackMachinePorts, path: &FieldPath, report: &mut Report) -> NetworkParam {
    not_on_a_network(port, path, report);
    let mut network = NetworkParam {
        port_tags: port.tags.clone().unwrap_or_default(),
        vnic_type: port.vnic_type.clone().unwrap_or_default(),
        profile: profile(port.profile.as_ref()),
        port_security: port.disable_port_security.map(|off| !off),
        no_allowed_address_pairs: port.allowed_address_pairs.as_ref().is_some_and(Vec::is_empty),
        ..NetworkParam::default()
    };
    if let Some(capo) = &port.network {
        network.uuid = capo.id.clone().unwrap_or_default();
        if let Some(filter) = &capo.filter {
            network.filter = Filter {
                name: filter.name.clone().unwrap_or_default(),
                description: filter.description.clone().unwrap_or_default(),
                project_id: filter.project_id.clone().unwrap_or_default(),
                tags: join_tags(filter.tags.as_deref()),
                tags_any: join_tags(filter.tags_any.as_deref()),
                not_tags: join_tags(filter.not_tags.as_deref()),
                not_tags_any: join_tags(filter.not_tags_any.as_deref()),
                ..Filter::default()
            };
        }
    }
    for (index, ip) in port.fixed_i_ps.iter().flatten().enumerate() {
        let path = path.child("fixedIPs").index(index);
        if let Some(address) = &ip.ip_address {
            report.error(FieldError::unsupported(
                path.child("ipAddress"),
                address,
                "a Machine API network cannot ask for an address; only a Machine API port (on a network by UUID) can",
            ));
        }
        match &ip.subnet {
            Some(subnet) => network.subnets.push(SubnetParam {
                uuid: subnet.id.clone().unwrap_or_default(),
                filter: subnet.filter.as_ref().map(subnet_filter).unwrap_or_default(),
                ..SubnetParam::default()
            }),
            None => report.error(FieldError::required(
                path.child("subnet"),
                "on a Machine API network every address is on a subnet",
            )),
        }
    }
    network
}

/// Port fields a Machine API network cannot carry.
fn not_on_a_network(port: &OpenStackMachinePorts, path: &FieldPath, report: &mut Report) {
    let set = [
        ("nameSuffix", port.name_suffix.is_some()),
        ("description", port.description.is_some()),
        ("adminStateUp", port.admin_state_up.is_some()),
        ("macAddress", port.mac_address.is_some()),
        ("securityGroups", port.security_groups.is_some()),
        ("trunk", port.trunk.is_some()),
        ("hostID", port.host_id.is_some()),
        ("propagateUplinkStatus", port.propagate_uplink_status.is_some()),
        ("valueSpecs", port.value_specs.is_some()),
        (
            "allowedAddressPairs",
            port.allowed_address_pairs.as_ref().is_some_and(|p| !p.is_empty()),
        ),
    ];
    for (name, _) in set.into_iter().filter(|(_, set)| *set) {
        report.error(FieldError::forbidden(
            path.child(name),
            "this port becomes a Machine API network (its network is a query, or it has none), which has no such field",
        ));
    }
}

fn subnet_filter(filter: &OpenStackMachinePortsFixedIPsSubnetFilter) -> SubnetFilter {
    SubnetFilter {
        cidr: filter.cidr.clone().unwrap_or_default(),
        description: filter.description.clone().unwrap_or_default(),
        gateway_ip: filter.gateway_ip.clone().unwrap_or_default(),
        ip_version: filter.ip_version.unwrap_or_default(),
        ipv6_address_mode: filter.ipv6_address_mode.clone().unwrap_or_default(),
        ipv6_ra_mode: filter.ipv6_ra_mode.clone().unwrap_or_default(),
        name: filter.name.clone().unwrap_or_default(),
        project_id: filter.project_id.clone().unwrap_or_default(),
        tags: join_tags(filter.tags.as_deref()),
        tags_any: join_tags(filter.tags_any.as_deref()),
        not_tags: join_tags(filter.not_tags.as_deref()),
        not_tags_any: join_tags(filter.not_tags_any.as_deref()),
        ..SubnetFilter::default()
    }
}

/// A port as a Machine API port: its network and subnets by UUID only.
fn mapi_port(port: &OpenStackMachinePorts, path: &FieldPath, report: &mut Report) -> PortOpts {
    let network_id = port
        .network
        .as_ref()
        .and_then(|n| n.id.clone())
        .unwrap_or_default();
    if network_id.is_empty() {
        report.error(FieldError::required(
            path.child("network").child("id"),
            "a Machine API port names its network by UUID",
        ));
    }
    for (name, set) in [
        ("hostID", port.host_id.is_some()),
        ("propagateUplinkStatus", port.propagate_uplink_status.is_some()),
    ] {
        if set {
            report.warn(
                path.child(name),
                "the Machine API has no such port field; dropped",
            );
        }
    }
    if port.value_specs.as_ref().is_some_and(|v| !v.is_empty()) {
        report.warn(
            path.child("valueSpecs"),
            "the Machine API has no such port field; dropped",
        );
    }
    PortOpts {
        network_id,
        name_suffix: port.name_suffix.clone().unwrap_or_default(),
        description: port.description.clone().unwrap_or_default(),
        admin_state_up: port.admin_state_up,
        mac_address: port.mac_address.clone().unwrap_or_default(),
        fixed_ips: fixed_ips(port, &path.child("fixedIPs"), report),
        security_groups: port_security_groups(port, &path.child("securityGroups"), report),
        allowed_address_pairs: port
            .allowed_address_pairs
            .iter()
            .flatten()
            .map(|pair| AddressPair {
                ip_address: pair.ip_address.clone(),
                mac_address: pair.mac_address.clone().unwrap_or_default(),
            })
            .collect(),
        tags: port.tags.clone().unwrap_or_default(),
        vnic_type: port.vnic_type.clone().unwrap_or_default(),
        profile: profile(port.profile.as_ref()),
        port_security: port.disable_port_security.map(|off| !off),
        trunk: port.trunk,
        ..PortOpts::default()
    }
}

fn fixed_ips(port: &OpenStackMachinePorts, path: &FieldPath, report: &mut Report) -> Vec<FixedIps> {
    let mut fixed = Vec::new();
    for (index, ip) in port.fixed_i_ps.iter().flatten().enumerate() {
        let path = path.index(index).child("subnet");
        let subnet = ip.subnet.as_ref();
        if subnet.and_then(|s| s.filter.as_ref()).is_some() {
            report.error(FieldError::forbidden(
                path.child("filter"),
                "a Machine API port names its subnets by UUID only",
            ));
        }
        match subnet.and_then(|s| s.id.clone()) {
            Some(subnet_id) => fixed.push(FixedIps {
                subnet_id,
                ip_address: ip.ip_address.clone().unwrap_or_default(),
            }),
            None => report.error(FieldError::required(
                path.child("id"),
                "a Machine API port names the subnet of each address by UUID",
            )),
        }
    }
    fixed
}

fn port_security_groups(
    port: &OpenStackMachinePorts,
    path: &FieldPath,
    report: &mut Report,
) -> Option<Vec<String>> {
    let groups = port.security_groups.as_ref()?;
    let mut ids = Vec::new();
    for (index, group) in groups.iter().enumerate() {
        match (&group.id, &group.filter) {
            (Some(id), None) => ids.push(id.clone()),
            _ => report.error(FieldError::forbidden(
                path.index(index).child("filter"),
                "a Machine API port names its security groups by UUID only",
            )),
        }
    }
    Some(ids)
}

/// The binding profile as the Machine API's map (the keys its provider reads).
fn profile(profile: Option<&OpenStackMachinePortsProfile>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Some(profile) = profile else { return map };
    if profile.ovs_hw_offload == Some(true) {
        map.insert("capabilities".to_owned(), "switchdev".to_owned());
    }
    if profile.trusted_vf == Some(true) {
        map.insert("trusted".to_owned(), "true".to_owned());
    }
    map
}

/// Neutron tags as the Machine API's comma-separated text.
pub(super) fn join_tags(tags: Option<&[String]>) -> String {
    tags.unwrap_or_default().join(",")
}
