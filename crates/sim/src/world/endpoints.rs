//! TCP endpoints as the core knows them: an address and an owner, found by the packets addressed to a
//! node and handed to the feature that runs them.

use super::*;

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

impl World {
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
    /// they were opened.
    pub(crate) fn poke_endpoints(&mut self, now: Time, node: usize, poke: impl Fn(&mut Role, Time)) {
        for ep in self.nodes[node].endpoints.clone() {
            let Endpoint { open, owner: Owner { feature, key }, .. } = self.endpoints[ep];
            if open {
                self.with_feature(feature, |f, w| f.on_endpoint_poke(w, now, key, &poke));
            }
        }
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

    /// Endpoint `ep`'s timer event is due: its owner fires the endpoint's timeout if that is due and runs
    /// it ([`Feature::on_endpoint_timer`](crate::feature::Feature::on_endpoint_timer)).
    pub(super) fn endpoint_timer(&mut self, now: Time, ep: usize) {
        let e = &mut self.endpoints[ep];
        if e.timer.is_some_and(|t| t <= now) {
            e.timer = None;
        }
        let Owner { feature, key } = e.owner;
        let at = self.endpoint_peer(ep);
        self.with_feature(feature, |f, w| f.on_endpoint_timer(w, now, key, (ep, at)));
    }

    /// Endpoint `ep`'s node and the address of its peer.
    pub(crate) fn endpoint_peer(&self, ep: usize) -> (usize, Ipv4Addr) {
        let e = &self.endpoints[ep];
        (e.node, *e.remote.ip())
    }

    /// Hands `packet`, addressed to `node`, to the node's endpoints (or a feature's datagram hook); an
    /// unreadable one counts as undeliverable.
    pub(crate) fn deliver_local(&mut self, now: Time, node: usize, packet: Bytes) {
        match Headers::parse(&packet) {
            Ok(headers) => self.deliver_parsed(now, node, packet, &headers),
            Err(_) => self.undeliverable += 1,
        }
    }

    /// [`World::deliver_local`] of a packet whose headers were read as `headers`.
    pub(super) fn deliver_parsed(&mut self, now: Time, node: usize, packet: Bytes, headers: &Headers) {
        if headers.protocol != PROTO_TCP {
            let taken = (0..self.features.len())
                .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_datagram(w, now, node, &packet)) == Some(true));
            if !taken {
                self.undeliverable += 1;
            }
            return;
        }
        let Some(tcp) = &headers.tcp else {
            self.undeliverable += 1;
            return;
        };
        let Some(ep) = self.nodes[node].find_endpoint((tcp.dst_port, headers.src, tcp.src_port), &self.endpoints)
        else {
            self.undeliverable += 1;
            return;
        };
        self.deliver_to_owner(now, ep, &packet, headers);
    }

    /// Hands `packet` (its headers read as `headers`) to the feature that keeps endpoint `ep`.
    pub(super) fn deliver_to_owner(&mut self, now: Time, ep: usize, packet: &Bytes, headers: &Headers) {
        let Owner { feature, key } = self.endpoints[ep].owner;
        let at = self.endpoint_peer(ep);
        let ran = self.with_feature(feature, |f, w| f.on_endpoint_packet(w, now, key, (ep, at), packet, headers));
        assert!(ran.is_some(), "a feature's own requests never deliver to its own endpoints");
    }

    /// Sends a packet that `node`'s own endpoint made, for feature `from` (`None`: one kept back, see below):
    /// offered first to the features' [`Feature::on_host_send`] (the link layer or the Mobile IP agent at a
    /// mobile host), else by the routing table.
    pub(crate) fn send_own(&mut self, now: Time, from: Option<FeatureId>, node: usize, dst: Ipv4Addr, packet: Bytes) {
        if self.hooks.host_send {
            let running = |(i, f): (usize, &Option<_>)| {
                f.is_none() && (Some(FeatureId(i)) != from || self.feature_hooks[i].host_send)
            };
            if self.features.iter().enumerate().any(running) {
                // Another feature runs now (an endpoint answering what it delivered), or the sender itself
                // wants to see what it sends: it too must see the packet.
                self.sent_while_a_feature_ran.push((now, node, dst, packet));
                return;
            }
            let taken = (0..self.features.len())
                .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_host_send(w, now, node, &packet)) == Some(true));
            if taken {
                return;
            }
        }
        self.route(now, node, dst, packet, false);
    }
}
