//! Every IP protocol number lasthop sends, in one table: each protocol module reads its number from here, so
//! two of them cannot take the same one unnoticed.

/// Declares each number as a constant and lists them all in [`ALL`], so the table cannot miss one.
macro_rules! protocols {
    ($($(#[doc = $doc:expr])* $name:ident = $num:expr;)*) => {
        $($(#[doc = $doc])* pub const $name: u8 = $num;)*

        /// Every protocol number above, by name.
        pub const ALL: &[(&str, u8)] = &[$((stringify!($name), $name)),*];
    };
}

protocols! {
    /// ICMP (RFC 792): Mobile IP's agent advertisements (RFC 5944 §2.1).
    ICMP = 1;
    /// IP in IP (RFC 2003): the tunnels of Mobile IP and of Balakrishnan 1995's handoff.
    IPIP = 4;
    /// TCP (RFC 9293).
    TCP = 6;
    /// UDP (RFC 768): Mobile IP's registrations and bindings.
    UDP = 17;
    /// Balakrishnan 1995's handoff control messages (`lasthop_agents::handoff`): the first of RFC 3692's two
    /// experimental values.
    HANDOFF = 253;
    /// Eom 2002's local messages between mobile, base station and foreign agent ([`crate::mip`]): the second of
    /// RFC 3692's experimental values.
    MIP_LOCAL = 254;
    /// The simulator's link-level ARQ frames (`lasthop_sim::arq`). A real link layer carries its frames below
    /// IP; the simulator carries every frame as IPv4, so they need a number, which never leaves a simulated
    /// link (it shows only in the simulator's pcaps). RFC 3692's two values being taken by the control
    /// messages above, it is 252, one IANA leaves unassigned.
    ARQ = 252;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_protocols_share_a_number() {
        for (i, (name, n)) in ALL.iter().enumerate() {
            if let Some((other, _)) = ALL[..i].iter().find(|(_, m)| m == n) {
                panic!("{name} and {other} both take IP protocol {n}");
            }
        }
    }

    #[test]
    fn experimental_numbers_are_rfc_3692s() {
        assert_eq!((HANDOFF, MIP_LOCAL), (253, 254));
        assert!(!ALL.iter().any(|&(_, n)| n == 255), "255 is reserved");
    }
}
