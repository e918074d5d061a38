//! What scripts/test builds on x86_64 glibc Linux: a static-pie (no program interpreter, and
//! position-independent, so ASLR still applies), the binary scripts/install.sh builds there. The
//! rest of the suite then runs against it, the hooks against loopback engines included.

use crate::support::BIN;

/// The ELF header's type and whether a program header names an interpreter (the dynamic loader).
fn elf_kind(bytes: &[u8]) -> Option<(u16, bool)> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // 64-bit little-endian ELF only: that is what the static build is made for.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let e_type = u16_at(16)?;
    let (phoff, phentsize, phnum) = (usize::try_from(u64_at(32)?).ok()?, usize::from(u16_at(54)?), u16_at(56)?);
    const PT_INTERP: u32 = 3;
    let interp = (0..usize::from(phnum)).any(|i| u32_at(phoff + i * phentsize) == Some(PT_INTERP));
    Some((e_type, interp))
}

#[test]
fn the_binary_under_test_is_a_static_pie_where_scripts_test_asks_for_one() {
    let bytes = std::fs::read(BIN).expect("read the binary under test");
    let kind = elf_kind(&bytes);
    if std::env::var("SYSTEM1_TEST_STATIC_PIE").as_deref() != Ok("1") {
        // A plain `cargo test`, or a platform without static-pie: nothing to check but the reader.
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            assert!(kind.is_some(), "not an ELF file: {BIN}");
            // The reader tells a dynamic executable from a static one: the shell has a loader.
            let sh = std::fs::read("/bin/sh").expect("read /bin/sh");
            assert_eq!(elf_kind(&sh).map(|(_, interp)| interp), Some(true), "/bin/sh has a program interpreter");
        }
        return;
    }
    const ET_DYN: u16 = 3;
    assert_eq!(kind, Some((ET_DYN, false)), "{BIN}: not a static-pie (type, has an interpreter)");
}
