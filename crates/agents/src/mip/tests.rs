//! State-machine tests of the Mobile IP entities: hand-built packets in, actions out; and the whole message
//! chain of a handoff (Eom 2002 Fig. 2) carried by hand from one entity to the next.

use super::*;
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_IPIP};
use lasthop_wire::mip::{
    reply_code, AgentAdvertisement, BindingUpdate, BindingWarning, LinkAddr, LocalKind, LocalMessage, MipMessage,
    PreviousFa, RegistrationReply, RegistrationRequest,
};
use lasthop_wire::{SeqNum, TcpRepr};
use std::net::Ipv4Addr;
use std::time::Duration;

pub(crate) const CH: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
pub(crate) const HA: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
pub(crate) const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 9);
pub(crate) const FA1: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 1);
pub(crate) const FA2: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 1);
pub(crate) const BS1: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);
pub(crate) const BS2: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 2);
pub(crate) const MSS: u32 = 100;
const T0: Time = Time(0);

fn link() -> LinkAddr {
    LinkAddr::for_host(MH)
}

/// A segment of the one connection (CH port 5001, MH port 40000): from the CH when `from_ch`, with sequence
/// number `seq`, cumulative ACK `ack`, `payload` bytes of `fill`, and IP ID `ident`.
fn segment(from_ch: bool, seq: u32, ack: u32, ident: u16, payload: usize, fill: u8) -> Bytes {
    let (src, dst, src_port, dst_port) = if from_ch { (CH, MH, 5001, 40000) } else { (MH, CH, 40000, 5001) };
    let repr =
        TcpRepr { src_port, dst_port, seq: SeqNum(seq), ack: Some(SeqNum(ack)), window: 65535, ..TcpRepr::default() };
    repr.emit_ipv4(src, dst, ident, 64, &vec![fill; payload])
}

/// CH → MH data segment `i` (sequence 1 + i·MSS), IP ID 1000 + i.
pub(crate) fn data_to_mh(i: u32) -> Bytes {
    segment(true, 1 + i * MSS, 1, 1000 + i as u16, MSS as usize, 7)
}

/// MH → CH cumulative ACK of everything before segment `i`.
pub(crate) fn ack_from_mh(i: u32) -> Bytes {
    segment(false, 1, 1 + i * MSS, 1, 0, 0)
}

/// MH → CH data segment `i` (the reverse direction).
fn data_from_mh(i: u32) -> Bytes {
    segment(false, 1 + i * MSS, 1, 2000 + i as u16, MSS as usize, 9)
}

/// CH → MH pure ACK of the mobile's data before segment `i`.
fn ack_to_mh(i: u32) -> Bytes {
    segment(true, 1, 1 + i * MSS, 3000 + i as u16, 0, 0)
}

pub(crate) fn flow_to_mh() -> FlowKey {
    FlowKey { src: CH, src_port: 5001, dst: MH, dst_port: 40000 }
}

/// The segment number of a CH → MH data packet.
pub(crate) fn seq_of(p: &Bytes) -> u32 {
    let t = TcpFields::read(p).expect("a TCP segment");
    (t.seq.0 - 1) / MSS
}

fn on(agent: &mut impl Agent, now: Time, side: Side, p: Bytes) -> Vec<Action> {
    let mut out = Vec::new();
    agent.handle_packet(now, side, p, &mut out);
    out
}

fn tunnel(inner: &Bytes, src: Ipv4Addr, dst: Ipv4Addr) -> Bytes {
    lasthop_wire::ipip::encapsulate(inner, src, dst, 1, 64)
}

/// The packets of `out` that leave toward `side` (forwarded or injected), in order.
fn sent(out: &[Action], side: Side) -> Vec<Bytes> {
    out.iter()
        .filter_map(|a| match a {
            Action::Forward(s, p) | Action::ForwardPriority(s, p) | Action::Inject(s, p) if *s == side => {
                Some(p.clone())
            }
            _ => None,
        })
        .collect()
}

fn addrs(p: &Bytes) -> (Ipv4Addr, Ipv4Addr, u8) {
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    (ip.src_addr(), ip.dst_addr(), ip.protocol())
}

fn mip(p: &Bytes) -> MipMessage {
    MipMessage::parse_ipv4(p).unwrap().expect("a Mobile IP message").2
}

fn local(p: &Bytes) -> LocalMessage {
    LocalMessage::parse_ipv4(p).unwrap().expect("a local message")
}

fn decap(p: &Bytes) -> Bytes {
    lasthop_wire::ipip::decapsulate(p).unwrap()
}

fn request(id: u64, previous: Option<Ipv4Addr>) -> RegistrationRequest {
    RegistrationRequest {
        flags: 0,
        lifetime: 600,
        home_addr: MH,
        home_agent: HA,
        care_of: FA2,
        identification: id,
        previous_fa: previous.map(|p| PreviousFa { cache_lifetime: 10, previous_fa: p, new_care_of: FA2 }),
    }
}

fn ro_fa(addr: Ipv4Addr) -> FaConfig {
    FaConfig { route_optimisation: true, advertisement_interval: None, ..FaConfig::new(addr) }
}

fn ha(ro: bool) -> HomeAgent {
    let mut ha = HomeAgent::new(HaConfig { route_optimisation: ro, ..HaConfig::new(HA) });
    ha.register(T0, MH, FA1, Duration::from_secs(600));
    ha
}

// ---- home agent ----

#[test]
fn ha_tunnels_to_the_care_of_address_and_drops_without_a_binding() {
    let mut ha = ha(false);
    let out = on(&mut ha, T0, Side::ToMobile, data_to_mh(0));
    let [Action::Forward(Side::ToMobile, p)] = &out[..] else { panic!("{out:?}") };
    assert_eq!(addrs(p), (HA, FA1, PROTO_IPIP));
    assert_eq!(decap(p), data_to_mh(0));
    // Other traffic passes untouched.
    let out = on(&mut ha, T0, Side::ToWired, ack_from_mh(1));
    assert_eq!(out, vec![Action::Forward(Side::ToWired, ack_from_mh(1))]);
    // A mobile served but not registered: nowhere to send.
    let mut bare = HomeAgent::new(HaConfig::new(HA));
    bare.serve(MH);
    assert_eq!(on(&mut bare, T0, Side::ToMobile, data_to_mh(0)), vec![Action::Drop(DropReason::NotDeliverable)]);
    assert_eq!(bare.stats().no_binding_dropped, 1);
    // The registration expires.
    assert_eq!(
        on(&mut ha, Time::from_secs(600), Side::ToMobile, data_to_mh(1)),
        vec![Action::Drop(DropReason::NotDeliverable)]
    );
}

#[test]
fn ha_registration_accepts_moves_the_binding_and_rejects_replays() {
    let mut ha = ha(false);
    let req = MipMessage::RegistrationRequest(request(5, None)).emit_ipv4(FA2, HA, 1);
    let out = on(&mut ha, T0, Side::ToWired, req.clone());
    assert_eq!(out[0], Action::Drop(DropReason::Consumed));
    let reply = &sent(&out, Side::ToMobile)[0];
    assert_eq!(addrs(reply).1, FA2, "the reply goes back to the relaying FA");
    assert_eq!(
        mip(reply),
        MipMessage::RegistrationReply(RegistrationReply {
            code: reply_code::ACCEPTED,
            lifetime: 600,
            home_addr: MH,
            home_agent: HA,
            identification: 5
        })
    );
    assert_eq!(ha.care_of(T0, MH), Some(FA2));
    // The same identification again is a replay.
    let out = on(&mut ha, T0, Side::ToWired, req);
    let MipMessage::RegistrationReply(r) = mip(&sent(&out, Side::ToMobile)[0]) else { panic!() };
    assert_eq!(r.code, reply_code::HA_IDENTIFICATION_MISMATCH);
    // A request naming another home agent is refused.
    let other = RegistrationRequest { home_agent: Ipv4Addr::new(1, 1, 1, 1), identification: 9, ..request(9, None) };
    let out = on(&mut ha, T0, Side::ToWired, MipMessage::RegistrationRequest(other).emit_ipv4(FA2, HA, 2));
    let MipMessage::RegistrationReply(r) = mip(&sent(&out, Side::ToMobile)[0]) else { panic!() };
    assert_eq!(r.code, reply_code::HA_UNKNOWN_HOME_AGENT);
    assert_eq!((ha.stats().registrations_accepted, ha.stats().registrations_denied), (1, 2));
    // Lifetime 0 deregisters.
    let dereg = RegistrationRequest { lifetime: 0, ..request(10, None) };
    on(&mut ha, T0, Side::ToWired, MipMessage::RegistrationRequest(dereg).emit_ipv4(FA2, HA, 3));
    assert_eq!(ha.care_of(T0, MH), None);
}

#[test]
fn ha_answers_a_binding_warning_with_a_binding_update_to_the_correspondent() {
    let warning = MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }).emit_ipv4(FA1, HA, 1);
    let mut base = ha(false);
    assert_eq!(on(&mut base, T0, Side::ToWired, warning.clone()), vec![Action::Drop(DropReason::Consumed)]);
    let mut ro = ha(true);
    let out = on(&mut ro, T0, Side::ToWired, warning);
    let [_, Action::Inject(Side::ToWired, p)] = &out[..] else { panic!("{out:?}") };
    assert_eq!(addrs(p).1, CH);
    let MipMessage::BindingUpdate(u) = mip(p) else { panic!() };
    assert_eq!((u.home_addr, u.care_of, u.lifetime), (MH, FA1, 300));
}

#[test]
fn ha_drops_malformed_and_unreadable_messages() {
    let mut ha = ha(true);
    assert_eq!(
        on(&mut ha, T0, Side::ToWired, Bytes::from_static(&[0x45, 0])),
        vec![Action::Drop(DropReason::Malformed)]
    );
    let mut bad =
        MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }).emit_ipv4(FA1, HA, 1).to_vec();
    let n = bad.len();
    bad[n - 1] ^= 1; // UDP checksum no longer matches
    assert_eq!(on(&mut ha, T0, Side::ToWired, Bytes::from(bad)), vec![Action::Drop(DropReason::Malformed)]);
    assert_eq!(ha.stats().malformed_dropped, 2);
}

// ---- foreign agent ----

#[test]
fn fa_answers_a_notification_with_an_advertisement_and_relays_registration() {
    let mut fa = ForeignAgent::new(ro_fa(FA2));
    let n = LocalMessage { kind: LocalKind::Notification, mobile: link(), home_addr: MH, sender: BS2 };
    let out = on(&mut fa, T0, Side::ToWired, n.emit_ipv4(BS2, FA2, 1));
    let adv = &sent(&out, Side::ToMobile)[0];
    assert_eq!(addrs(adv).1, MH);
    let a = AgentAdvertisement::parse_ipv4(adv).unwrap().unwrap();
    assert_eq!((a.router, a.care_of.clone()), (FA2, vec![FA2]));
    assert!(fa.is_visitor(MH) && !fa.is_registered(MH));

    // The request from the cell goes on to the HA; with the previous FA named, a binding update goes there.
    let req = MipMessage::RegistrationRequest(request(3, Some(FA1))).emit_ipv4(MH, FA2, 1);
    let out = on(&mut fa, T0, Side::ToWired, req);
    let up = sent(&out, Side::ToWired);
    assert_eq!(up.len(), 2);
    assert_eq!(addrs(&up[0]), (FA2, HA, 17));
    assert_eq!(mip(&up[0]), MipMessage::RegistrationRequest(request(3, Some(FA1))));
    assert_eq!(addrs(&up[1]).1, FA1);
    let MipMessage::BindingUpdate(u) = mip(&up[1]) else { panic!() };
    assert_eq!((u.home_addr, u.care_of, u.lifetime), (MH, FA2, 10));

    // The HA's reply goes down to the mobile and completes the registration.
    let r = RegistrationReply { code: 0, lifetime: 600, home_addr: MH, home_agent: HA, identification: 3 };
    let out = on(&mut fa, T0, Side::ToMobile, MipMessage::RegistrationReply(r).emit_ipv4(HA, FA2, 1));
    let down = sent(&out, Side::ToMobile);
    assert_eq!(addrs(&down[0]), (FA2, MH, 17));
    assert!(fa.is_registered(MH));

    // Tunnelled data for the visitor is decapsulated and sent into the cell.
    let out = on(&mut fa, T0, Side::ToMobile, tunnel(&data_to_mh(0), HA, FA2));
    assert_eq!(out, vec![Action::Forward(Side::ToMobile, data_to_mh(0))]);
}

#[test]
fn fa_without_route_optimisation_sends_no_binding_update_and_loses_what_it_cannot_deliver() {
    let mut fa = ForeignAgent::new(FaConfig { advertisement_interval: None, ..FaConfig::new(FA2) });
    let req = MipMessage::RegistrationRequest(request(3, Some(FA1))).emit_ipv4(MH, FA2, 1);
    assert_eq!(sent(&on(&mut fa, T0, Side::ToWired, req.clone()), Side::ToWired).len(), 1, "only the relayed request");
    assert!(!fa.is_visitor(MH), "no notification and no cell BS configured: not yet a visitor");
    // With its cell's BS known, a mobile that registers straight off a broadcast advertisement is a visitor.
    let mut with_bs =
        ForeignAgent::new(FaConfig { advertisement_interval: None, cell_bs: Some(BS2), ..FaConfig::new(FA2) });
    on(&mut with_bs, T0, Side::ToWired, req);
    assert!(with_bs.is_visitor(MH));
    let out = on(&mut with_bs, T0, Side::ToMobile, tunnel(&data_to_mh(0), HA, FA2));
    assert_eq!(out, vec![Action::Forward(Side::ToMobile, data_to_mh(0))]);
    // A binding update is ignored: the old FA of base Mobile IP keeps no forwarding pointer.
    let mut old = ForeignAgent::new(FaConfig { advertisement_interval: None, ..FaConfig::new(FA1) });
    old.add_visitor(T0, MH, HA, link(), BS1);
    let bu = BindingUpdate { ack_requested: false, lifetime: 10, home_addr: MH, care_of: FA2, identification: 1 };
    on(&mut old, T0, Side::ToWired, MipMessage::BindingUpdate(bu).emit_ipv4(FA2, FA1, 1));
    assert!(old.is_visitor(MH));
    // So it keeps sending into its cell, where the mobile no longer is.
    let out = on(&mut old, T0, Side::ToMobile, tunnel(&data_to_mh(0), HA, FA1));
    assert_eq!(out, vec![Action::Forward(Side::ToMobile, data_to_mh(0))]);
    // For a mobile it never had, tunnelled packets are lost here.
    let mut empty = ForeignAgent::new(FaConfig { advertisement_interval: None, ..FaConfig::new(FA1) });
    let out = on(&mut empty, T0, Side::ToMobile, tunnel(&data_to_mh(0), HA, FA1));
    assert_eq!(out, vec![Action::Drop(DropReason::NotDeliverable)]);
    assert_eq!(empty.stats().lost_no_binding, 1);
}

fn old_fa(forward: bool, reorder: bool) -> ForeignAgent {
    let mut fa = ForeignAgent::new(FaConfig { forward_buffer: forward, reorder_through_old_bs: reorder, ..ro_fa(FA1) });
    fa.add_visitor(T0, MH, HA, link(), BS1);
    fa
}

fn binding_update_to_old_fa(fa: &mut ForeignAgent, now: Time) -> Vec<Action> {
    let bu = BindingUpdate { ack_requested: false, lifetime: 10, home_addr: MH, care_of: FA2, identification: 1 };
    on(fa, now, Side::ToWired, MipMessage::BindingUpdate(bu).emit_ipv4(FA2, FA1, 1))
}

#[test]
fn old_fa_retunnels_to_the_new_fa_and_warns_the_ha_once_a_second() {
    let mut fa = old_fa(false, false);
    let out = binding_update_to_old_fa(&mut fa, T0);
    assert_eq!(out, vec![Action::Drop(DropReason::Consumed)], "no forward message without buffering");
    assert!(!fa.is_visitor(MH));
    assert_eq!(fa.binding(T0, MH), Some(FA2));

    // From the correspondent (route-optimised tunnel): re-tunnelled, and a binding warning naming the CH.
    let out = on(&mut fa, T0, Side::ToMobile, tunnel(&data_to_mh(0), CH, FA1));
    let up = sent(&out, Side::ToWired);
    assert_eq!(addrs(&up[0]), (FA1, FA2, PROTO_IPIP));
    assert_eq!(decap(&up[0]), data_to_mh(0));
    assert_eq!(addrs(&up[1]).1, HA);
    assert_eq!(mip(&up[1]), MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }));
    // Within a second: re-tunnelled, no second warning.
    let out = on(&mut fa, Time::from_millis(500), Side::ToMobile, tunnel(&data_to_mh(1), CH, FA1));
    assert_eq!(sent(&out, Side::ToWired).len(), 1);
    // From the HA: re-tunnelled, no warning (the HA has the registration).
    let out = on(&mut fa, Time::from_secs(2), Side::ToMobile, tunnel(&data_to_mh(2), HA, FA1));
    assert_eq!(sent(&out, Side::ToWired).len(), 1);
    assert_eq!(fa.stats().binding_warnings_sent, 1);
    // The binding lasts its lifetime (10 s), then what arrives is lost.
    let out = on(&mut fa, Time::from_secs(10), Side::ToMobile, tunnel(&data_to_mh(3), CH, FA1));
    assert_eq!(out, vec![Action::Drop(DropReason::NotDeliverable)]);
}

#[test]
fn old_fa_with_buffering_sends_forward_to_the_old_bs_and_retunnels_what_comes_back() {
    let mut fa = old_fa(true, false);
    let out = binding_update_to_old_fa(&mut fa, T0);
    let down = sent(&out, Side::ToMobile);
    assert_eq!(addrs(&down[0]).1, BS1);
    assert_eq!(local(&down[0]), LocalMessage { kind: LocalKind::Forward, mobile: link(), home_addr: MH, sender: FA1 });
    // The old BS's buffered packets come up addressed to the mobile: re-tunnelled to the new FA in order.
    for i in 0..3 {
        let out = on(&mut fa, T0, Side::ToWired, data_to_mh(i));
        let [Action::Forward(Side::ToWired, p)] = &out[..] else { panic!("{out:?}") };
        assert_eq!(addrs(p), (FA1, FA2, PROTO_IPIP));
        assert_eq!(decap(p), data_to_mh(i));
    }
    assert_eq!(fa.stats().retunnelled_from_bs, 3);
    // Without the re-ordering rule, a tunnelled arrival goes straight to the new FA.
    let out = on(&mut fa, T0, Side::ToMobile, tunnel(&data_to_mh(5), CH, FA1));
    assert_eq!(addrs(&sent(&out, Side::ToWired)[0]).1, FA2);
}

#[test]
fn old_fa_with_the_reordering_rule_sends_later_arrivals_down_through_the_old_bs() {
    let mut fa = old_fa(true, true);
    binding_update_to_old_fa(&mut fa, T0);
    let out = on(&mut fa, T0, Side::ToMobile, tunnel(&data_to_mh(5), CH, FA1));
    assert_eq!(out[0], Action::Forward(Side::ToMobile, data_to_mh(5)), "Fig. 17: through the old BS's buffer");
    assert_eq!(fa.stats().detoured_through_bs, 1);
    // What then comes up from the BS goes to the new FA.
    let out = on(&mut fa, T0, Side::ToWired, data_to_mh(5));
    assert_eq!(addrs(&sent(&out, Side::ToWired)[0]).1, FA2);
}

#[test]
fn fa_broadcasts_advertisements_at_most_once_a_second() {
    let mut fa = ForeignAgent::new(FaConfig::new(FA1));
    assert_eq!(fa.poll_timeout(), Some(T0));
    let mut out = Vec::new();
    fa.handle_timeout(T0, &mut out);
    let [Action::Inject(Side::ToMobile, p)] = &out[..] else { panic!("{out:?}") };
    assert_eq!(addrs(p).1, Ipv4Addr::BROADCAST);
    assert!(AgentAdvertisement::parse_ipv4(p).unwrap().is_some());
    assert_eq!(fa.poll_timeout(), Some(Time::from_secs(1)));
    out.clear();
    fa.handle_timeout(Time::from_millis(999), &mut out);
    assert!(out.is_empty());
}

// ---- base station ----

fn bs(buffer: Option<usize>, cleanup: Cleanup) -> BaseStation {
    let mut bs = BaseStation::new(BsConfig { buffer_packets: buffer, cleanup, ..BsConfig::new(BS1, FA1) });
    bs.attach(T0, MH, link());
    bs
}

fn forward_msg(to: Ipv4Addr, mobile: LinkAddr) -> Bytes {
    LocalMessage { kind: LocalKind::Forward, mobile, home_addr: MH, sender: FA1 }.emit_ipv4(FA1, to, 1)
}

#[test]
fn bs_beacons_every_50_ms() {
    let mut b = BaseStation::new(BsConfig::new(BS1, FA1));
    let mut out = Vec::new();
    for k in 0..3 {
        let t = Time::from_millis(50 * k);
        assert_eq!(b.poll_timeout(), Some(t));
        b.handle_timeout(t, &mut out);
    }
    assert_eq!(out.len(), 3);
    let Action::Inject(Side::ToMobile, p) = &out[0] else { panic!() };
    assert_eq!(local(p).kind, LocalKind::Beacon);
    assert_eq!(local(p).sender, BS1);
    assert_eq!(addrs(p).1, Ipv4Addr::BROADCAST);
}

#[test]
fn bs_turns_a_handoff_request_into_a_notification_to_its_fa() {
    let mut b = BaseStation::new(BsConfig::new(BS2, FA2));
    let hr = LocalMessage { kind: LocalKind::HandoffRequest, mobile: link(), home_addr: MH, sender: BS2 };
    let out = on(&mut b, T0, Side::ToWired, hr.emit_ipv4(MH, BS2, 1));
    let up = sent(&out, Side::ToWired);
    assert_eq!(addrs(&up[0]).1, FA2);
    assert_eq!(
        local(&up[0]),
        LocalMessage { kind: LocalKind::Notification, mobile: link(), home_addr: MH, sender: BS2 }
    );
    assert!(b.is_attached(MH));
    // A request meant for another BS is not ours.
    let mut other = BaseStation::new(BsConfig::new(BS1, FA1));
    assert!(sent(&on(&mut other, T0, Side::ToWired, hr.emit_ipv4(MH, BS2, 1)), Side::ToWired).is_empty());
    assert!(!other.is_attached(MH));
}

#[test]
fn bs_buffers_data_sends_it_up_on_forward_and_passes_later_arrivals_behind_it() {
    let mut b = bs(Some(4), Cleanup::None);
    for i in 0..6 {
        assert_eq!(on(&mut b, T0, Side::ToMobile, data_to_mh(i)), vec![Action::Forward(Side::ToMobile, data_to_mh(i))]);
    }
    // Control traffic to the mobile is bridged, not buffered.
    let adv = AgentAdvertisement {
        router: FA1,
        lifetime: 1,
        sequence: 1,
        registration_lifetime: 1,
        flags: 0,
        care_of: vec![FA1],
    };
    on(&mut b, T0, Side::ToMobile, adv.emit_ipv4(FA1, MH, 1));
    assert_eq!(b.buffered(MH).iter().map(seq_of).collect::<Vec<_>>(), vec![2, 3, 4, 5], "head drop");
    // A forward naming another mobile's link address does nothing.
    let out = on(&mut b, T0, Side::ToMobile, forward_msg(BS1, LinkAddr([2, 0, 0, 0, 0, 1])));
    assert_eq!(out, vec![Action::Drop(DropReason::Consumed)]);
    // Forward: the buffer goes up to the old FA, oldest first.
    let out = on(&mut b, T0, Side::ToMobile, forward_msg(BS1, link()));
    assert_eq!(sent(&out, Side::ToWired).iter().map(seq_of).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
    assert!(!b.is_attached(MH));
    // Fig. 17: later arrivals from the old FA go up behind the buffer.
    let out = on(&mut b, T0, Side::ToMobile, data_to_mh(6));
    assert_eq!(sent(&out, Side::ToWired), vec![data_to_mh(6)]);
    assert!(sent(&out, Side::ToMobile).is_empty());
    // After the hold the mobile is forgotten.
    let hold = b.poll_timeout().unwrap();
    let mut out = Vec::new();
    b.handle_timeout(Time::from_secs(10), &mut out);
    assert!(hold <= Time::from_secs(10));
    assert_eq!(
        on(&mut b, Time::from_secs(10), Side::ToMobile, data_to_mh(7)),
        vec![Action::Drop(DropReason::NotDeliverable)]
    );
    assert_eq!(b.stats().buffer_head_drops, 2);
}

#[test]
fn bs_without_buffering_is_a_plain_bridge() {
    let mut b = bs(None, Cleanup::None);
    on(&mut b, T0, Side::ToMobile, data_to_mh(0));
    let out = on(&mut b, T0, Side::ToMobile, forward_msg(BS1, link()));
    assert_eq!(out, vec![Action::Drop(DropReason::Consumed)]);
}

#[test]
fn bs_tcp_ack_cleanup_keeps_only_what_the_mobile_has_not_acknowledged() {
    let mut b = bs(Some(32), Cleanup::TcpAck);
    for i in 0..5 {
        on(&mut b, T0, Side::ToMobile, data_to_mh(i));
    }
    let out = on(&mut b, T0, Side::ToWired, ack_from_mh(3));
    assert_eq!(out, vec![Action::Forward(Side::ToWired, ack_from_mh(3))], "the ACK goes on unchanged");
    assert_eq!(b.buffered(MH).iter().map(seq_of).collect::<Vec<_>>(), vec![3, 4]);
    let out = on(&mut b, T0, Side::ToMobile, forward_msg(BS1, link()));
    assert_eq!(sent(&out, Side::ToWired).iter().map(seq_of).collect::<Vec<_>>(), vec![3, 4], "no duplicate re-sent");
    // Without cleanup the same ACK frees nothing.
    let mut plain = bs(Some(32), Cleanup::None);
    on(&mut plain, T0, Side::ToMobile, data_to_mh(0));
    on(&mut plain, T0, Side::ToWired, ack_from_mh(1));
    assert_eq!(plain.buffered(MH).len(), 1);
}

#[test]
fn bs_link_ack_cleanup_frees_delivered_frames() {
    let mut b = bs(Some(32), Cleanup::LinkAck);
    for i in 0..3 {
        on(&mut b, T0, Side::ToMobile, data_to_mh(i));
    }
    b.handle_link_ack(MH, &data_to_mh(0));
    b.handle_link_ack(MH, &data_to_mh(2));
    assert_eq!(b.buffered(MH).iter().map(seq_of).collect::<Vec<_>>(), vec![1]);
    // TCP ACKs do not clean a link-ACK buffer.
    on(&mut b, T0, Side::ToWired, ack_from_mh(3));
    assert_eq!(b.buffered(MH).len(), 1);
    assert_eq!(b.stats().buffer_freed_by_ack, 2);
}

#[test]
fn bs_drops_malformed_and_frames_for_mobiles_it_does_not_have() {
    let mut b = bs(Some(4), Cleanup::None);
    assert_eq!(on(&mut b, T0, Side::ToMobile, Bytes::from_static(b"junk")), vec![Action::Drop(DropReason::Malformed)]);
    let stranger = TcpRepr { src_port: 1, dst_port: 2, ..TcpRepr::default() }.emit_ipv4(
        CH,
        Ipv4Addr::new(10, 2, 0, 77),
        1,
        64,
        b"x",
    );
    assert_eq!(on(&mut b, T0, Side::ToMobile, stranger), vec![Action::Drop(DropReason::NotDeliverable)]);
}

// ---- correspondent ----

#[test]
fn correspondent_tunnels_to_the_care_of_address_once_told() {
    let mut cn = Correspondent::new(CH, 16);
    assert_eq!(on(&mut cn, T0, Side::ToWired, data_to_mh(0)), vec![Action::Forward(Side::ToWired, data_to_mh(0))]);
    let bu = |id, care_of, lifetime, ack| {
        MipMessage::BindingUpdate(BindingUpdate {
            ack_requested: ack,
            lifetime,
            home_addr: MH,
            care_of,
            identification: id,
        })
        .emit_ipv4(HA, CH, 1)
    };
    let out = on(&mut cn, T0, Side::ToMobile, bu(2, FA2, 300, true));
    let ack = &sent(&out, Side::ToWired)[0];
    assert_eq!(addrs(ack).1, HA);
    assert!(matches!(mip(ack), MipMessage::BindingAck(a) if a.identification == 2));
    let out = on(&mut cn, T0, Side::ToWired, data_to_mh(1));
    let [Action::Forward(Side::ToWired, p)] = &out[..] else { panic!() };
    assert_eq!(addrs(p), (CH, FA2, PROTO_IPIP));
    assert_eq!(decap(p), data_to_mh(1));
    // An older update (reordered) does not undo a newer one.
    on(&mut cn, T0, Side::ToMobile, bu(1, FA1, 300, false));
    assert_eq!(cn.binding(T0, MH), Some(FA2));
    assert_eq!(cn.stats().binding_updates_stale, 1);
    // Lifetime 0 deletes; expiry too.
    on(&mut cn, T0, Side::ToMobile, bu(3, FA2, 0, false));
    assert_eq!(cn.binding(T0, MH), None);
    on(&mut cn, T0, Side::ToMobile, bu(4, FA1, 5, false));
    assert_eq!(cn.binding(Time::from_secs(5), MH), None);
}

// ---- mobile ----

fn mobile(notify: bool, own: usize) -> MobileNode {
    let mut m =
        MobileNode::new(MnConfig { notify_previous_fa: notify, own_buffer_packets: own, ..MnConfig::new(MH, HA) });
    m.attach(BS1, FA1);
    m
}

fn beacon(from: Ipv4Addr) -> Bytes {
    LocalMessage {
        kind: LocalKind::Beacon,
        mobile: LinkAddr::BROADCAST,
        home_addr: Ipv4Addr::UNSPECIFIED,
        sender: from,
    }
    .emit_ipv4(from, Ipv4Addr::BROADCAST, 1)
}

fn advertisement(fa: Ipv4Addr) -> Bytes {
    AgentAdvertisement {
        router: fa,
        lifetime: 1800,
        sequence: 1,
        registration_lifetime: 600,
        flags: 0x90,
        care_of: vec![fa],
    }
    .emit_ipv4(fa, MH, 1)
}

#[test]
fn mobile_requests_handoff_on_a_new_beacon_and_registers_on_a_new_advertisement() {
    let mut m = mobile(true, 0);
    assert_eq!(on(&mut m, T0, Side::ToMobile, beacon(BS1)), vec![Action::Drop(DropReason::Consumed)]);
    let out = on(&mut m, T0, Side::ToMobile, beacon(BS2));
    let hr = &sent(&out, Side::ToWired)[0];
    assert_eq!(addrs(hr).1, BS2);
    assert_eq!(local(hr), LocalMessage { kind: LocalKind::HandoffRequest, mobile: link(), home_addr: MH, sender: BS2 });
    // The old FA's advertisement changes nothing; the new one's starts a registration naming the old FA.
    assert!(sent(&on(&mut m, T0, Side::ToMobile, advertisement(FA1)), Side::ToWired).is_empty());
    let out = on(&mut m, T0, Side::ToMobile, advertisement(FA2));
    let req = &sent(&out, Side::ToWired)[0];
    assert_eq!(addrs(req), (MH, FA2, 17));
    assert_eq!(mip(req), MipMessage::RegistrationRequest(request(1, Some(FA1))));
    // A second advertisement while it is pending sends nothing more.
    assert!(sent(&on(&mut m, T0, Side::ToMobile, advertisement(FA2)), Side::ToWired).is_empty());
    let reply = |id| {
        MipMessage::RegistrationReply(RegistrationReply {
            code: 0,
            lifetime: 600,
            home_addr: MH,
            home_agent: HA,
            identification: id,
        })
        .emit_ipv4(FA2, MH, 1)
    };
    on(&mut m, T0, Side::ToMobile, reply(7));
    assert_eq!(m.registered_fa(), Some(FA1), "a reply to another request is not ours");
    on(&mut m, T0, Side::ToMobile, reply(1));
    assert_eq!(m.registered_fa(), Some(FA2));
    let events: Vec<_> = m.take_events().into_iter().map(|(_, e)| e).collect();
    assert_eq!(
        events,
        vec![
            MnEvent::HandoffRequested { bs: BS2 },
            MnEvent::RegistrationSent { fa: FA2 },
            MnEvent::Registered { fa: FA2 }
        ]
    );
}

#[test]
fn mobile_keeps_its_last_data_packets_and_resends_the_unacknowledged_after_handoff() {
    let mut m = mobile(false, 2);
    for i in 0..3 {
        on(&mut m, T0, Side::ToWired, data_from_mh(i));
    }
    on(&mut m, T0, Side::ToWired, ack_from_mh(0)); // a pure ACK is not kept
                                                   // The CH has acknowledged segment 1 (so 1 of the two kept, 1 and 2, is freed).
    on(&mut m, T0, Side::ToMobile, ack_to_mh(2));
    on(&mut m, T0, Side::ToMobile, advertisement(FA2));
    let reply = MipMessage::RegistrationReply(RegistrationReply {
        code: 0,
        lifetime: 600,
        home_addr: MH,
        home_agent: HA,
        identification: 1,
    });
    let out = on(&mut m, T0, Side::ToMobile, reply.emit_ipv4(FA2, MH, 1));
    assert_eq!(sent(&out, Side::ToWired), vec![data_from_mh(2)]);
    assert_eq!(m.stats().own_packets_resent, 1);
    // Without the buffer nothing is re-sent.
    let mut plain = mobile(false, 0);
    on(&mut plain, T0, Side::ToWired, data_from_mh(0));
    on(&mut plain, T0, Side::ToMobile, advertisement(FA2));
    let reply = MipMessage::RegistrationReply(RegistrationReply {
        code: 0,
        lifetime: 600,
        home_addr: MH,
        home_agent: HA,
        identification: 1,
    });
    assert!(sent(&on(&mut plain, T0, Side::ToMobile, reply.emit_ipv4(FA2, MH, 1)), Side::ToWired).is_empty());
}

fn reply_to_mh(identification: u64, code: u8) -> Bytes {
    let r = RegistrationReply { code, lifetime: 600, home_addr: MH, home_agent: HA, identification };
    MipMessage::RegistrationReply(r).emit_ipv4(FA2, MH, 1)
}

/// The host's own packets pass unchanged; the buffer keeps the newest two (the oldest goes first), a reply
/// to another registration or a denial re-sends nothing, and only an accepted registration re-sends.
#[test]
fn mobile_passes_its_own_packets_keeps_the_newest_and_resends_only_on_its_accepted_registration() {
    let mut m = mobile(false, 2);
    for i in 0..4 {
        let out = on(&mut m, T0, Side::ToWired, data_from_mh(i));
        assert_eq!(sent(&out, Side::ToWired), vec![data_from_mh(i)], "passed on unchanged");
    }
    on(&mut m, T0, Side::ToMobile, advertisement(FA2));
    assert!(sent(&on(&mut m, T0, Side::ToMobile, reply_to_mh(7, 0)), Side::ToWired).is_empty(), "not ours");
    assert!(sent(&on(&mut m, T0, Side::ToMobile, reply_to_mh(1, 65)), Side::ToWired).is_empty(), "denied");
    assert_eq!(m.stats().registrations_denied, 1);
    on(&mut m, T0, Side::ToMobile, advertisement(FA2));
    let out = on(&mut m, T0, Side::ToMobile, reply_to_mh(2, 0));
    assert_eq!(sent(&out, Side::ToWired), vec![data_from_mh(2), data_from_mh(3)]);
    assert_eq!(m.stats().own_packets_resent, 2);
}

// ---- the whole exchange ----

/// Eom 2002 Fig. 2 with buffering, every message carried by hand from the entity that sends it to the one
/// it is addressed to: beacon → handoff request → notification → agent advertisement → registration request
/// (→ HA, and binding update → old FA) → forward → buffered packets re-tunnelled to the new FA → new BS →
/// mobile; binding warning → HA → binding update → correspondent, which then tunnels to the new FA.
#[test]
fn a_handoff_with_buffering_follows_fig_2_end_to_end() {
    let t = T0;
    let mut ha = ha(true);
    let mut cn = Correspondent::new(CH, 16);
    cn.set_binding(t, MH, FA1, Duration::from_secs(300));
    let mut fa1 = old_fa(true, true);
    let mut fa2 = ForeignAgent::new(FaConfig { forward_buffer: true, reorder_through_old_bs: true, ..ro_fa(FA2) });
    let mut bs1 = bs(Some(32), Cleanup::None);
    let mut bs2 = BaseStation::new(BsConfig { buffer_packets: Some(32), ..BsConfig::new(BS2, FA2) });
    let mut mn = mobile(true, 0);

    // Data 0..4 reach the old BS; the mobile gets 0..1 and has left when 2..3 go out over the air.
    for i in 0..4 {
        let out = on(&mut cn, t, Side::ToWired, data_to_mh(i));
        let out = on(&mut fa1, t, Side::ToMobile, sent(&out, Side::ToWired)[0].clone());
        on(&mut bs1, t, Side::ToMobile, sent(&out, Side::ToMobile)[0].clone());
    }

    let hr = sent(&on(&mut mn, t, Side::ToMobile, beacon(BS2)), Side::ToWired)[0].clone();
    let notification = sent(&on(&mut bs2, t, Side::ToWired, hr), Side::ToWired)[0].clone();
    let adv = sent(&on(&mut fa2, t, Side::ToWired, notification), Side::ToMobile)[0].clone();
    let adv = sent(&on(&mut bs2, t, Side::ToMobile, adv), Side::ToMobile)[0].clone();
    let req = sent(&on(&mut mn, t, Side::ToMobile, adv), Side::ToWired)[0].clone();
    let req = sent(&on(&mut bs2, t, Side::ToWired, req), Side::ToWired)[0].clone();
    let up = sent(&on(&mut fa2, t, Side::ToWired, req), Side::ToWired);
    let (to_ha, bu) = (up[0].clone(), up[1].clone());

    // The binding update reaches the old FA: forward to the old BS, whose buffer comes back up.
    let fwd = sent(&on(&mut fa1, t, Side::ToWired, bu), Side::ToMobile)[0].clone();
    let buffered = sent(&on(&mut bs1, t, Side::ToMobile, fwd), Side::ToWired);
    assert_eq!(buffered.len(), 4);
    // A packet from the CH reaches the old FA during the forward: it goes through the old BS (Fig. 17).
    let late = sent(&on(&mut cn, t, Side::ToWired, data_to_mh(4)), Side::ToWired)[0].clone();
    let out = on(&mut fa1, t, Side::ToMobile, late);
    let late_down = sent(&out, Side::ToMobile)[0].clone();
    let warning = sent(&out, Side::ToWired)[0].clone();
    let late_up = sent(&on(&mut bs1, t, Side::ToMobile, late_down), Side::ToWired);
    let mut at_mobile = Vec::new();
    for p in buffered.into_iter().chain(late_up) {
        let retunnelled = sent(&on(&mut fa1, t, Side::ToWired, p), Side::ToWired)[0].clone();
        assert_eq!(addrs(&retunnelled).1, FA2);
        let inner = sent(&on(&mut fa2, t, Side::ToMobile, retunnelled), Side::ToMobile)[0].clone();
        let air = sent(&on(&mut bs2, t, Side::ToMobile, inner), Side::ToMobile)[0].clone();
        at_mobile.extend(sent(&on(&mut mn, t, Side::ToMobile, air), Side::ToMobile));
    }
    assert_eq!(at_mobile.iter().map(seq_of).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4], "all of them, in order");

    // Registration completes at the HA and back through the new FA to the mobile.
    let reply = sent(&on(&mut ha, t, Side::ToWired, to_ha), Side::ToMobile)[0].clone();
    let reply = sent(&on(&mut fa2, t, Side::ToMobile, reply), Side::ToMobile)[0].clone();
    let reply = sent(&on(&mut bs2, t, Side::ToMobile, reply), Side::ToMobile)[0].clone();
    on(&mut mn, t, Side::ToMobile, reply);
    assert_eq!(mn.registered_fa(), Some(FA2));
    assert!(fa2.is_registered(MH));

    // The warning makes the HA update the correspondent, which then tunnels straight to the new FA.
    assert_eq!(mip(&warning), MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }));
    let bu = sent(&on(&mut ha, t, Side::ToWired, warning), Side::ToWired)[0].clone();
    on(&mut cn, t, Side::ToMobile, bu);
    let out = on(&mut cn, t, Side::ToWired, data_to_mh(5));
    assert_eq!(addrs(&sent(&out, Side::ToWired)[0]), (CH, FA2, PROTO_IPIP));
}
