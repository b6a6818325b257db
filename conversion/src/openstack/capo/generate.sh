#!/bin/sh
# Regenerates the Cluster API Provider OpenStack types from the upstream CRDs the project
# keeps. Needs kopium (`cargo install kopium --version 0.24.1 --locked`); run from anywhere:
#   conversion/src/openstack/capo/generate.sh
# `cargo test -p conversion --test crd_drift` checks the output against the CRDs without
# kopium installed.
set -eu
root=$(cd "$(dirname "$0")/../../../.." && pwd)
cd "$root"
crds=envtest/tests/fixtures/upstream-crds/capo
out=conversion/src/openstack/capo
for kind in openstackmachines openstackmachinetemplates; do
    kopium -f "$crds/infrastructure.cluster.x-k8s.io_$kind.yaml" --api-version v1beta1 \
        --schema=derived --derive Default --derive PartialEq --smart-derive-elision --no-condition \
        > "$out/$kind.rs"
done
cargo fmt -p conversion
