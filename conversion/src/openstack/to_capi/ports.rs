//! The providerSpec's `ports` and `networks` → `OpenStackMachine.spec.ports`: ports first,
//! then one port per network (or, for a network named only by its subnets, one per subnet),
//! the order in which the Machine API provider creates them.

use std::collections::BTreeMap;

use crate::errors::{FieldError, FieldPath, Report};
use crate::openstack::capo::openstackmachines::{
    OpenStackMachinePorts, OpenStackMachinePortsAllowedAddressPairs, OpenStackMachinePortsFixedIPs,
    OpenStackMachinePortsFixedIPsSubnet, OpenStackMachinePortsFixedIPsSubnetFilter,
    OpenStackMachinePortsNetwork, OpenStackMachinePortsNetworkFilter, OpenStackMachinePortsProfile,
    OpenStackMachinePortsSecurityGroups,
};
use crate::openstack::non_empty;
use crate::openstack::provider::{Filter, NetworkParam, PortOpts, SubnetParam};

/// `ports[*]`, each on the network its `networkID` names.
pub(super) fn from_ports(
    ports: &[PortOpts],
    path: &FieldPath,
    report: &mut Report,
) -> Vec<OpenStackMachinePorts> {
    let ports = ports.iter().enumerate();
    ports
        .map(|(index, port)| from_port(port, &path.index(index), report))
        .collect()
}

fn from_port(port: &PortOpts, path: &FieldPath, report: &mut Report) -> OpenStackMachinePorts {
    if port.network_id.is_empty() {
        report.error(FieldError::required(
            path.child("networkID"),
            "a port needs its network's UUID",
        ));
    }
    for (name, value) in [
        ("tenantID", &port.tenant_id),
        ("projectID", &port.project_id),
        ("hostID", &port.host_id),
    ] {
        if !value.is_empty() {
            report.warn(path.child(name), "ignored by the Machine API provider; dropped");
        }
    }
    let fixed_ips = port.fixed_ips.iter().map(|ip| OpenStackMachinePortsFixedIPs {
        ip_address: non_empty(&ip.ip_address),
        subnet: non_empty(&ip.subnet_id).map(|id| OpenStackMachinePortsFixedIPsSubnet {
            id: Some(id),
            filter: None,
        }),
    });
    let pairs = port
        .allowed_address_pairs
        .iter()
        .map(|pair| OpenStackMachinePortsAllowedAddressPairs {
            ip_address: pair.ip_address.clone(),
            mac_address: non_empty(&pair.mac_address),
        });
    let groups = port.security_groups.as_ref().map(|groups| {
        let groups = groups.iter();
        groups
            .map(|id| OpenStackMachinePortsSecurityGroups {
                id: Some(id.clone()),
                filter: None,
            })
            .collect()
    });
    OpenStackMachinePorts {
        admin_state_up: port.admin_state_up,
        allowed_address_pairs: (!port.allowed_address_pairs.is_empty()).then(|| pairs.collect()),
        description: non_empty(&port.description),
        disable_port_security: port.port_security.map(|on| !on),
        fixed_i_ps: (!port.fixed_ips.is_empty()).then(|| fixed_ips.collect()),
        mac_address: non_empty(&port.mac_address),
        name_suffix: non_empty(&port.name_suffix),
        network: Some(OpenStackMachinePortsNetwork {
            id: non_empty(&port.network_id),
            filter: None,
        }),
        profile: profile(&port.profile, true, &path.child("profile"), report),
        security_groups: groups,
        tags: tag_set(port.tags.iter()),
        trunk: port.trunk,
        vnic_type: non_empty(&port.vnic_type),
        ..OpenStackMachinePorts::default()
    }
}

/// `networks[*]`: a named network (UUID or query) is one port with an address on each of
/// its subnets; a network named only by its subnets is one port per subnet.
pub(super) fn from_networks(
    networks: &[NetworkParam],
    path: &FieldPath,
    report: &mut Report,
) -> Vec<OpenStackMachinePorts> {
    let mut ports = Vec::new();
    for (index, network) in networks.iter().enumerate() {
        let path = path.index(index);
        if !network.fixed_ip.is_empty() {
            report.warn(
                path.child("fixedIp"),
                "ignored by the Machine API provider; dropped",
            );
        }
        let profile = profile(&network.profile, false, &path.child("profile"), report);
        let common = OpenStackMachinePorts {
            allowed_address_pairs: network.no_allowed_address_pairs.then(Vec::new),
            disable_port_security: network.port_security.map(|on| !on),
            profile,
            vnic_type: non_empty(&network.vnic_type),
            ..OpenStackMachinePorts::default()
        };
        match network_param(network, &path.child("filter"), report) {
            Some(capo_network) => {
                ports.push(named_network_port(network, capo_network, common, &path, report))
            }
            None => ports.extend(subnet_ports(network, &common, &path, report)),
        }
    }
    ports
}

/// The network by UUID (or the filter's deprecated `id`), else by query; `None` when only
/// its subnets name it.
fn network_param(
    network: &NetworkParam,
    path: &FieldPath,
    report: &mut Report,
) -> Option<OpenStackMachinePortsNetwork> {
    let filter = &network.filter;
    deprecated_network_filter(filter, path, report);
    let id = if network.uuid.is_empty() {
        &filter.id
    } else {
        &network.uuid
    };
    if !id.is_empty() {
        return Some(OpenStackMachinePortsNetwork {
            id: Some(id.clone()),
            filter: None,
        });
    }
    let query = OpenStackMachinePortsNetworkFilter {
        name: non_empty(&filter.name),
        description: non_empty(&filter.description),
        project_id: project(&filter.project_id, &filter.tenant_id),
        tags: split_tags(&filter.tags),
        tags_any: split_tags(&filter.tags_any),
        not_tags: split_tags(&filter.not_tags),
        not_tags_any: split_tags(&filter.not_tags_any),
    };
    (query != OpenStackMachinePortsNetworkFilter::default()).then_some(OpenStackMachinePortsNetwork {
        id: None,
        filter: Some(query),
    })
}

fn deprecated_network_filter(filter: &Filter, path: &FieldPath, report: &mut Report) {
    deprecated_paging(
        path,
        filter.limit,
        [
            ("marker", &filter.marker),
            ("sortKey", &filter.sort_key),
            ("sortDir", &filter.sort_dir),
        ],
        report,
    );
    if !filter.status.is_empty() {
        report.warn(
            path.child("status"),
            "deprecated and ignored by the Machine API provider; dropped",
        );
    }
    for (name, set) in [
        ("adminStateUp", filter.admin_state_up.is_some()),
        ("shared", filter.shared.is_some()),
    ] {
        if set {
            report.warn(
                path.child(name),
                "deprecated and ignored by the Machine API provider; dropped",
            );
        }
    }
}

/// One port on a named network, with an address on each subnet and the port tags of the
/// network and of every subnet.
fn named_network_port(
    network: &NetworkParam,
    capo_network: OpenStackMachinePortsNetwork,
    common: OpenStackMachinePorts,
    path: &FieldPath,
    report: &mut Report,
) -> OpenStackMachinePorts {
    let mut tags = network.port_tags.clone();
    let mut fixed_ips = Vec::new();
    for (index, subnet) in network.subnets.iter().enumerate() {
        let path = path.child("subnets").index(index);
        subnet_port_security(subnet, &path, report);
        tags.extend(subnet.port_tags.iter().cloned());
        fixed_ips.push(OpenStackMachinePortsFixedIPs {
            ip_address: None,
            subnet: subnet_param(subnet, &path, report),
        });
    }
    OpenStackMachinePorts {
        network: Some(capo_network),
        fixed_i_ps: (!fixed_ips.is_empty()).then_some(fixed_ips),
        tags: tag_set(tags.iter()),
        ..common
    }
}

/// One port per subnet of a network named only by its subnets.
fn subnet_ports(
    network: &NetworkParam,
    common: &OpenStackMachinePorts,
    path: &FieldPath,
    report: &mut Report,
) -> Vec<OpenStackMachinePorts> {
    if network.subnets.is_empty() {
        report.error(FieldError::required(
            path.child("uuid"),
            "a network needs a uuid, a filter or subnets",
        ));
    }
    let subnets = network.subnets.iter().enumerate();
    subnets
        .map(|(index, subnet)| {
            let path = path.child("subnets").index(index);
            let tags = tag_set(network.port_tags.iter().chain(&subnet.port_tags));
            subnet_port_security(subnet, &path, report);
            let subnet_param = subnet_param(subnet, &path, report);
            OpenStackMachinePorts {
                fixed_i_ps: subnet_param.map(|subnet| {
                    vec![OpenStackMachinePortsFixedIPs {
                        ip_address: None,
                        subnet: Some(subnet),
                    }]
                }),
                tags,
                ..common.clone()
            }
        })
        .collect()
}

/// The Machine API provider reads a network's port security only (not a subnet's).
fn subnet_port_security(subnet: &SubnetParam, path: &FieldPath, report: &mut Report) {
    if subnet.port_security.is_some() {
        report.warn(
            path.child("portSecurity"),
            "ignored by the Machine API provider (the network's portSecurity applies); dropped",
        );
    }
}

/// A subnet by UUID (or the filter's deprecated `id`) and query, as the Machine API
/// provider looks it up; `None` when nothing names it.
fn subnet_param(
    subnet: &SubnetParam,
    path: &FieldPath,
    report: &mut Report,
) -> Option<OpenStackMachinePortsFixedIPsSubnet> {
    let filter = &subnet.filter;
    let path = path.child("filter");
    deprecated_paging(
        &path,
        filter.limit,
        [
            ("marker", &filter.marker),
            ("sortKey", &filter.sort_key),
            ("sortDir", &filter.sort_dir),
        ],
        report,
    );
    if filter.enable_dhcp.is_some() {
        report.warn(
            path.child("enableDhcp"),
            "deprecated and ignored by the Machine API provider; dropped",
        );
    }
    if !filter.network_id.is_empty() {
        report.warn(
            path.child("networkId"),
            "ignored by the Machine API provider; dropped",
        );
    }
    if !filter.subnetpool_id.is_empty() {
        report.error(FieldError::unsupported(
            path.child("subnetpoolId"),
            &filter.subnetpool_id,
            "CAPO cannot look a subnet up by its subnet pool",
        ));
    }
    let id = if subnet.uuid.is_empty() {
        &filter.id
    } else {
        &subnet.uuid
    };
    let query = OpenStackMachinePortsFixedIPsSubnetFilter {
        cidr: non_empty(&filter.cidr),
        description: non_empty(&filter.description),
        gateway_ip: non_empty(&filter.gateway_ip),
        ip_version: (filter.ip_version != 0).then_some(filter.ip_version),
        ipv6_address_mode: non_empty(&filter.ipv6_address_mode),
        ipv6_ra_mode: non_empty(&filter.ipv6_ra_mode),
        name: non_empty(&filter.name),
        project_id: project(&filter.project_id, &filter.tenant_id),
        tags: split_tags(&filter.tags),
        tags_any: split_tags(&filter.tags_any),
        not_tags: split_tags(&filter.not_tags),
        not_tags_any: split_tags(&filter.not_tags_any),
    };
    let query = (query != OpenStackMachinePortsFixedIPsSubnetFilter::default()).then_some(query);
    (query.is_some() || !id.is_empty()).then(|| OpenStackMachinePortsFixedIPsSubnet {
        id: non_empty(id),
        filter: query,
    })
}

/// The binding profile: `capabilities` (SR-IOV offload when it contains `switchdev`) and
/// `trusted` are the two keys the Machine API provider reads, and CAPO has no way to pass
/// any other. Another key is refused on a port (as OpenShift's conversion does) and,
/// on a network, where that conversion drops it, a warning.
fn profile(
    profile: &BTreeMap<String, String>,
    refuse: bool,
    path: &FieldPath,
    report: &mut Report,
) -> Option<OpenStackMachinePortsProfile> {
    let mut converted = OpenStackMachinePortsProfile::default();
    for (key, value) in profile {
        match key.as_str() {
            "capabilities" => converted.ovs_hw_offload = Some(value.contains("switchdev")),
            "trusted" => converted.trusted_vf = Some(value == "true"),
            _ if refuse => report.error(FieldError::unsupported(
                path.key(key),
                value,
                "CAPO's binding profile only has capabilities (switchdev) and trusted",
            )),
            _ => report.warn(path.key(key), "ignored by the Machine API provider; dropped"),
        }
    }
    (converted != OpenStackMachinePortsProfile::default()).then_some(converted)
}

/// Warns about the deprecated paging fields of a Neutron query.
pub(super) fn deprecated_paging(
    path: &FieldPath,
    limit: i64,
    texts: [(&str, &String); 3],
    report: &mut Report,
) {
    if limit != 0 {
        report.warn(
            path.child("limit"),
            "deprecated and ignored by the Machine API provider; dropped",
        );
    }
    for (name, value) in texts {
        if !value.is_empty() {
            report.warn(
                path.child(name),
                "deprecated and ignored by the Machine API provider; dropped",
            );
        }
    }
}

/// The project, falling back to the tenant (its old name), as the Machine API provider reads it.
pub(super) fn project(project: &str, tenant: &str) -> Option<String> {
    non_empty(if project.is_empty() { tenant } else { project })
}

/// Tags in their first order without repeats: Nova and Neutron tags are sets, and CAPO's
/// tag lists are `x-kubernetes-list-type: set` (a repeat would be refused).
pub(super) fn tag_set<'a>(tags: impl Iterator<Item = &'a String>) -> Option<Vec<String>> {
    let mut set: Vec<String> = Vec::new();
    for tag in tags {
        if !set.contains(tag) {
            set.push(tag.clone());
        }
    }
    (!set.is_empty()).then_some(set)
}

/// Comma-separated Neutron tags as a list (`None` for none), without repeats.
pub(super) fn split_tags(tags: &str) -> Option<Vec<String>> {
    let tags: Vec<String> = tags
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    tag_set(tags.iter())
}
