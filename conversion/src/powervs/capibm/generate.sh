#!/bin/sh
# Regenerates the Cluster API Provider IBM Cloud (PowerVS) types from the upstream CRDs the
# project keeps. Needs kopium (`cargo install kopium --version 0.24.1 --locked`); run from
# anywhere:
#   conversion/src/powervs/capibm/generate.sh
# `cargo test -p conversion --test crd_drift` checks the output against the CRDs without
# kopium installed.
set -eu
root=$(cd "$(dirname "$0")/../../../.." && pwd)
cd "$root"
crds=envtest/tests/fixtures/upstream-crds/capibm
out=conversion/src/powervs/capibm
for kind in ibmpowervsmachines ibmpowervsmachinetemplates; do
    kopium -f "$crds/infrastructure.cluster.x-k8s.io_$kind.yaml" --api-version v1beta2 \
        --schema=derived --derive Default --derive PartialEq --smart-derive-elision --no-condition \
        > "$out/$kind.rs"
done
cargo fmt -p conversion
