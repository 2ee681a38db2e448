//! The one place that names the simulator's protocol families and workloads: each registers here, in the
//! order that breaks same-instant ties and decides which feature sees a packet first (see
//! [`crate::feature`]).

use crate::context::{Setup, View};
use crate::world::World;
use crate::{Scenario, SimError};

/// Builds and registers every feature the scenario asks for, in the order that fixes same-instant ties.
pub(crate) fn build_all(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    build_features(s, world)?;
    build_flows(s, world)
}

/// The protocol families and the Web workload, registered before the bulk flows.
pub(crate) fn build_features(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    // Before the split relays, so that a failed node drops packets before a relay could take them.
    if let Some(f) = crate::failure::Failure::build(s, View::new(world)) {
        world.register(f);
    }
    // Before mobility, so that a split base station takes its connections' packets out of the home agent's
    // tunnel before the handoff agent would forward them (`crate::split`).
    if let Some(f) = crate::split::Split::build(s, View::new(world))? {
        world.register(f);
    }
    if let Some(m) = crate::mobility::feature::Mobility::build(s, &mut Setup::new(world)) {
        world.register(m);
    }
    if let Some(w) = crate::web::feature::WebWorkloads::build(s, View::new(world))? {
        world.register(w);
    }
    if let Some(m) = crate::mobile_ip::feature::MobileIp::build(s, &mut Setup::new(world)) {
        world.register(m);
    }
    if let Some(f) = crate::arq::Arq::build(s, View::new(world)) {
        world.register(f);
    }
    Ok(())
}

/// The bulk flows, registered last: they find their paths once every feature has shaped the routes, and
/// their starts take their places at time zero after every other feature's set-up events (see "Same-instant
/// order" in [`crate::feature`]).
pub(crate) fn build_flows(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    if let Some(b) = crate::bulk::BulkFlows::build(s, &mut Setup::new(world))? {
        world.register(b);
    }
    Ok(())
}
