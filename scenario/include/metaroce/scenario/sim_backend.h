// The simulator backend of the scenario engine (engine.h): a run's fabric
// changes and jobs in the deterministic simulator (the real transport engine
// and emulator in virtual time).
//
// Scenario time is scaled by sim.time_scale (timeline instants, flap periods,
// ramp lengths, duration and interval; link delays are not), because the
// simulated fabric has microsecond RTTs where the software datapath has
// milliseconds. Reports carry scenario seconds on the time axis and simulated
// rates (bits per simulated second), so plots line up with live runs.
#pragma once

#include <vector>

#include "metaroce/emulator/timeline.h"
#include "metaroce/scenario/engine.h"

namespace metaroce::scenario {

// A change in the emulator's terms. A flap's period and outage are scaled by
// time_scale (its phase starts when the change is applied); the rest is not.
// emulator_selector and emulator_patch are the one mapping of a scenario's
// selectors and link settings: the live backend sends them (time_scale 1)
// through the API codec.
emulator::LinkSelector emulator_selector(const Selector& s);
emulator::LinkPatch emulator_patch(const FabricChange& c, double time_scale);
// The scenario's fabric with `planes` planes in the emulator's terms: the
// topology, its shape and every link's starting rate and propagation delay
// (mesh: every link at the link rate, no propagation delay, base.delay being
// the delay the base sets; clos: per tier, as topology says), seeded by the
// scenario's seed. The one mapping of a scenario's topology; the simulator
// adds its hosts' addresses, the parser checks clos selectors against it.
emulator::FabricConfig emulator_fabric(const Scenario& s, uint32_t planes);
// The run's timeline in simulated time (instants scaled by time_scale).
emulator::Timeline sim_timeline(const RunPlan& plan, double time_scale);
// Each simulated host's completion queue depth: the WRITEs its jobs can have
// outstanding (connections x streams x queue depth, summed over the jobs it
// sends from; at least 1). A completion waits in the queue only until the
// host's next activity polls it, and a job posts again only from a polled
// completion, so the queue cannot overflow; were it ever to, the run reports
// the lost completions as an error. (The engine's default, 65,536 entries or
// 2 MiB per host, made endpoints most of a 1,024-host run's memory.)
std::vector<uint32_t> sim_completion_queue_depths(const RunPlan& plan, uint32_t hosts);

}  // namespace metaroce::scenario
