//! TCP endpoints as the core knows them: an address and an owner, found by the packets addressed to a
//! node and handed to the feature that runs them.

use super::*;
use crate::registered::EndpointAt;

impl Node {
    pub(super) fn add_endpoint(&mut self, ep: usize, key: EndpointKey) {
        self.endpoints.push(ep);
        self.by_key.entry(key).or_insert(ep);
    }

    /// Endpoint `ep` (named by `key`) closed: the next open endpoint with the same key, if any, takes its
    /// place, as a scan of the list would find it.
    pub(super) fn remove_endpoint(&mut self, ep: usize, key: EndpointKey, endpoints: &[Endpoint]) {
        self.endpoints.retain(|&e| e != ep);
        if self.by_key.get(&key) == Some(&ep) {
            match self.endpoints.iter().copied().find(|&e| endpoints[e].key() == key) {
                Some(next) => self.by_key.insert(key, next),
                None => self.by_key.remove(&key),
            };
        }
    }

    /// The first open endpoint named by `key`.
    pub(super) fn find_endpoint(&self, key: EndpointKey, endpoints: &[Endpoint]) -> Option<usize> {
        if self.endpoints.len() <= SCAN_ENDPOINTS_UP_TO {
            self.endpoints.iter().copied().find(|&e| endpoints[e].key() == key)
        } else {
            self.by_key.get(&key).copied()
        }
    }
}

impl Core {
    /// A TCP endpoint at `node` (packets from `remote` to `local` reach it); returns its index.
    pub(crate) fn add_endpoint(
        &mut self,
        owner: Owner,
        node: usize,
        local: SocketAddrV4,
        remote: SocketAddrV4,
    ) -> usize {
        let ep = self.endpoints.len();
        let e = Endpoint { owner, node, local, remote, open: true, timer: None };
        self.nodes[node].add_endpoint(ep, e.key());
        self.endpoints.push(e);
        ep
    }

    /// Closes endpoint `ep`: no packet reaches it any more.
    pub(crate) fn close_endpoint(&mut self, ep: usize) {
        self.endpoints[ep].open = false;
        let (node, key) = (self.endpoints[ep].node, self.endpoints[ep].key());
        self.nodes[node].remove_endpoint(ep, key, &self.endpoints);
    }

    /// Has every open endpoint at `node` poked by its owner ([`Feature::on_endpoint_poke`]), in the order
    /// they were opened (queued as [`Work::Poke`]).
    pub(crate) fn poke_endpoints(&mut self, node: usize, poke: crate::context::EndpointPoke) {
        self.work.push_back(Work::Poke { node, poke });
    }

    /// Queues endpoint `ep`'s timer for `want` (its owner's [`Feature::endpoint_timeout`]), unless one is
    /// queued for that time or earlier already.
    ///
    /// [`Feature::endpoint_timeout`]: crate::feature::Feature::endpoint_timeout
    #[inline]
    pub(crate) fn arm_endpoint_timer(&mut self, ep: usize, want: Option<Time>) {
        let Some(t) = want else { return };
        let e = &mut self.endpoints[ep];
        if e.timer.is_none_or(|s| t < s) {
            e.timer = Some(t);
            self.sched.schedule(t, Event::EndpointTimer { ep });
        }
    }

    /// Endpoint `ep`'s timer event is due: forgets the pending time if it is due; returns its owner and
    /// where it is, for the owner to fire it
    /// ([`Feature::on_endpoint_timer`](crate::feature::Feature::on_endpoint_timer)).
    pub(super) fn endpoint_timer_due(&mut self, now: Time, ep: usize) -> (Owner, EndpointAt) {
        let e = &mut self.endpoints[ep];
        if e.timer.is_some_and(|t| t <= now) {
            e.timer = None;
        }
        (e.owner, (ep, self.endpoint_peer(ep)))
    }

    /// Endpoint `ep`'s node and the address of its peer.
    pub(crate) fn endpoint_peer(&self, ep: usize) -> (usize, Ipv4Addr) {
        let e = &self.endpoints[ep];
        (e.node, *e.remote.ip())
    }

    /// Hands `packet`, addressed to `node`, to the node's endpoints (or the datagram hooks of the features but
    /// `from`, the feature that asked); an unreadable one counts as undeliverable.
    pub(crate) fn deliver_local(&mut self, from: Option<FeatureId>, node: usize, packet: Bytes) {
        match Headers::parse(&packet) {
            Ok(headers) => self.deliver_parsed(from, node, packet, headers),
            Err(_) => self.undeliverable += 1,
        }
    }

    /// [`Core::deliver_local`] of a packet whose headers were read as `headers`: queued as
    /// [`Work::Deliver`], so its endpoint is found when the delivery is carried out.
    pub(super) fn deliver_parsed(&mut self, from: Option<FeatureId>, node: usize, packet: Bytes, headers: Headers) {
        self.work.push_back(Work::Deliver { from, node, packet, headers });
    }

    /// The open endpoint at `node` that a TCP packet with `headers` is for, with its owner and where it is;
    /// `None` (counted undeliverable) when there is none.
    pub(super) fn endpoint_for(&mut self, node: usize, headers: &Headers) -> Option<(Owner, EndpointAt)> {
        let found = headers
            .tcp
            .as_ref()
            .and_then(|tcp| self.nodes[node].find_endpoint((tcp.dst_port, headers.src, tcp.src_port), &self.endpoints));
        let Some(ep) = found else {
            self.undeliverable += 1;
            return None;
        };
        Some((self.endpoints[ep].owner, (ep, self.endpoint_peer(ep))))
    }

    /// Sends a packet that `node`'s own endpoint made, for feature `from`: offered first to the other
    /// features' [`Feature::on_host_send`] (the link layer or the Mobile IP agent at a mobile host, queued as
    /// [`Work::HostSend`]), else by the routing table.
    pub(crate) fn send_own(&mut self, now: Time, from: FeatureId, node: usize, dst: Ipv4Addr, packet: Bytes) {
        if self.hooks.host_send {
            self.work.push_back(Work::HostSend { from, node, dst, packet });
        } else {
            self.route(now, node, dst, packet, false);
        }
    }
}
