//! The simulator's end-to-end tests: whole scenarios run through `lasthop_sim::run`, one module per subject.
//! One test binary rather than one per file: the sixteen would each link the simulator and its dependencies.

mod support;

mod access;
mod alternatives;
mod e2e;
mod handoff_alternatives;
mod integrity;
mod linux_profile;
mod medium;
mod mobile_ip;
mod mobility;
mod motion;
mod pcap_errors;
mod pcap_tshark;
mod scale;
mod split_reverse;
mod tcp_behaviours;
mod web;
