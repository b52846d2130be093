//! Where RDMA formats meet the other protocols.

use crate::gsas::{Message, Notification};
use hal::pldma::rapf::SeedRapfWord;

#[test]
fn seed_rapf_words_and_gsas_notifications_never_collide() {
    // Every RAPF word has a zero top nibble, which no notification has.
    for (wired_pd, tid, seq, user_pd) in [(0, 0, 0, 0), (0xffff, 0x3fff, 0xfff, 0xffff), (3, 77, 12, 3)] {
        let raw = SeedRapfWord { wired_pd, tid, seq, user_pd }.encode().unwrap();
        assert!(Notification::from_raw(raw).is_err(), "{raw:#x} is not a notification");
    }
    // No notification decodes as a RAPF word, whatever its payload's low bits.
    for opcode in 1..16u64 {
        for payload in [2u64, 0x0fff_ffff_ffff_fffe, 0x0800_0000_0000_0002] {
            let raw = opcode << 60 | payload;
            assert_eq!(SeedRapfWord::decode(raw), None, "notification {raw:#x}");
        }
    }
    let ping = Message::Ping { nonce: 2 }.encode().unwrap().raw();
    assert_eq!(SeedRapfWord::decode(ping), None);
}
