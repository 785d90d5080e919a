//! The seccomp filter that refuses sockets without network.

use super::*;

/// The compiled filter for a fence without network (and for unasked code
/// with it): a socket of another family than IPv4, IPv6 and netlink's
/// route family, a datagram socket pair, io_uring
/// and the kernel keyrings fail with EPERM. Any other
/// architecture than the build's kills the process (a 32-bit program's
/// `socketcall` cannot be looked into).
pub(super) fn socket_filter_program() -> Result<&'static [u8], String> {
    static PROGRAM: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            use nix::libc;
            use seccompiler::{
                BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
                SeccompFilter, SeccompRule, TargetArch,
            };
            let e = |e: seccompiler::BackendError| e.to_string();
            let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(e)?;
            let cond = |arg, op, value: u64| {
                SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(e)
            };
            // socket(): only the families the private network namespace
            // holds (IPv4, IPv6 on its loopback; netlink for the
            // interface list). Unix sockets reach host services through any
            // socket file; vsock reaches the hypervisor.
            let family = SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
                cond(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
                cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
            ])
            .map_err(e)?;
            // netlink only for the route family (the interface list): the
            // others reach the host's kernel and its processes (a
            // NETLINK_USERSOCK listener) when the network is shared.
            let netlink = SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Eq, libc::AF_NETLINK as u64)?,
                cond(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE as u64)?,
            ])
            .map_err(e)?;
            // socketpair(): a datagram pair can still send to any datagram
            // socket file (raw is datagram for Unix sockets); stream and
            // seqpacket pairs cannot be pointed elsewhere.
            let datagram = |kind: i32| {
                SeccompRule::new(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?])
                    .map_err(e)
            };
            let pairs = vec![datagram(libc::SOCK_DGRAM)?, datagram(libc::SOCK_RAW)?];
            // x86_64 also takes the x32 numbers (bit 30 set) under its own
            // audit arch.
            let aliases: &[i64] = if cfg!(target_arch = "x86_64") {
                &[0, 0x4000_0000]
            } else {
                &[0]
            };
            let mut rules = std::collections::BTreeMap::new();
            for base in aliases {
                rules.insert(
                    base | libc::SYS_socket,
                    vec![family.clone(), netlink.clone()],
                );
                rules.insert(base | libc::SYS_socketpair, pairs.clone());
                // io_uring's requests pass by this filter; the kernel
                // keyrings are the host's (and request_key runs a host
                // program, outside every namespace).
                for nr in [
                    libc::SYS_io_uring_setup,
                    libc::SYS_io_uring_enter,
                    libc::SYS_io_uring_register,
                    libc::SYS_add_key,
                    libc::SYS_request_key,
                    libc::SYS_keyctl,
                ] {
                    rules.insert(base | nr, vec![]);
                }
            }
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(libc::EPERM as u32),
                arch,
            )
            .map_err(e)?;
            let program: BpfProgram = filter.try_into().map_err(e)?;
            let mut bytes = Vec::new();
            for i in program {
                bytes.extend_from_slice(&i.code.to_ne_bytes());
                bytes.push(i.jt);
                bytes.push(i.jf);
                bytes.extend_from_slice(&i.k.to_ne_bytes());
            }
            Ok(bytes)
        })
        .as_ref()
        .map(std::vec::Vec::as_slice)
        .map_err(Clone::clone)
}

/// The filter in a fresh close-on-exec memory file, read from its start.
pub(super) fn socket_filter() -> Result<OwnedFd, String> {
    let program = socket_filter_program()?;
    let fd =
        nix::sys::memfd::memfd_create(c"mm-fence-filter", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
            .map_err(|e| e.to_string())?;
    let mut file = std::fs::File::from(fd);
    file.write_all(program)
        .and_then(|_| file.rewind())
        .map_err(|e| e.to_string())?;
    Ok(OwnedFd::from(file))
}
