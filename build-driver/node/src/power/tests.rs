//! `power`: the magic packet's bytes as a loopback UDP receiver gets them, refusals before
//! anything is sent, suspend commands, and hostlists handed to scontrol.

use super::PowerArgs;
use super::mac::Mac;
use super::wol::{PACKET_LEN, packet};
use super::{Action, PowerError, hosts, run};
use std::net::UdpSocket;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAC1: [u8; 6] = [0xa4, 0x83, 0xe7, 0x00, 0x11, 0x22];
const MAC2: [u8; 6] = [0x3c, 0x22, 0xfb, 0xab, 0xcd, 0xef];

/// A loopback UDP receiver that gives up after 2 s.
fn receiver() -> UdpSocket {
    let r = UdpSocket::bind("127.0.0.1:0").expect("bind a loopback UDP socket");
    r.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("set a read timeout");
    r
}

fn write_map(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("power.toml");
    std::fs::write(&path, text).expect("write the map");
    path
}

/// A map of mac1 and mac2 whose packets go to `to`; mac1 suspends with `suspend1`.
fn two_nodes(dir: &Path, to: &UdpSocket, suspend1: &str) -> PathBuf {
    let to = to.local_addr().expect("receiver address");
    write_map(
        dir,
        &format!(
            "broadcast = \"{to}\"\n\n[node.mac1]\nmac = \"a4:83:e7:00:11:22\"\nsuspend = {suspend1}\n\n\
             [node.mac2]\nmac = \"3C-22-FB-AB-CD-EF\"\nsuspend = [\"true\"]\n"
        ),
    )
}

fn args(action: Action, hostlist: &str, map: PathBuf) -> PowerArgs {
    PowerArgs {
        action,
        hostlist: hostlist.to_string(),
        map,
        scontrol: PathBuf::from("scontrol-not-needed"),
        timeout: 10,
    }
}

/// What the receiver got within its timeout, one datagram.
fn received(r: &UdpSocket) -> Option<Vec<u8>> {
    let mut buf = [0u8; 512];
    r.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}

#[test]
fn packet__six_ff_then_the_mac_sixteen_times() {
    let p = packet(Mac(MAC1));
    assert_eq!(p.len(), 102);
    assert_eq!(&p[..6], &[0xFF; 6]);
    for i in 0..16 {
        assert_eq!(&p[6 + 6 * i..12 + 6 * i], &MAC1, "repetition {i}");
    }
}

#[test]
fn mac__parses_colons_and_dashes_and_refuses_the_rest() {
    assert_eq!(Mac::parse("a4:83:e7:00:11:22"), Some(Mac(MAC1)));
    assert_eq!(Mac::parse("A4-83-E7-00-11-22"), Some(Mac(MAC1)));
    assert_eq!(Mac(MAC1).to_string(), "a4:83:e7:00:11:22");
    for bad in [
        "a4:83:e7:00:11",
        "a4:83:e7:00:11:22:33",
        "a4:83:e7:00:11:zz",
        "a4:83:e7:00:11:2",
        "a4:83-e7:00:11:22",
        "a483e7001122",
        "",
    ] {
        assert_eq!(Mac::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn resume__sends_each_nodes_magic_packet_to_the_broadcast_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver();
    let map = two_nodes(dir.path(), &r, "[\"true\"]");
    run(&args(Action::Resume, "mac1,mac2", map)).expect("resume");
    let first = received(&r).expect("mac1's packet");
    let second = received(&r).expect("mac2's packet");
    assert_eq!(first.len(), PACKET_LEN);
    assert_eq!(first, packet(Mac(MAC1)).to_vec());
    assert_eq!(second, packet(Mac(MAC2)).to_vec());
}

#[test]
fn resume__unknown_node_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver();
    r.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let map = two_nodes(dir.path(), &r, "[\"true\"]");
    let err = run(&args(Action::Resume, "mac1,ghost", map.clone())).expect_err("ghost unknown");
    assert!(matches!(err, PowerError::UnknownNode { ref node, .. } if node == "ghost"));
    let text = err.to_string();
    assert!(text.contains("ghost") && text.contains(&map.display().to_string()));
    assert!(
        text.contains("it has: mac1, mac2") && text.contains("[node.ghost]"),
        "{text}"
    );
    assert_eq!(
        received(&r),
        None,
        "mac1 was woken although the call was refused"
    );
}

#[test]
fn resume__bad_mac_refused_naming_node_and_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let map = write_map(
        dir.path(),
        "broadcast = \"127.0.0.1:9\"\n[node.mac1]\nmac = \"a4:83:e7:00:11\"\n",
    );
    let err = run(&args(Action::Resume, "mac1", map)).expect_err("bad MAC");
    let text = err.to_string();
    assert!(matches!(err, PowerError::BadMac { .. }), "{text}");
    assert!(
        text.contains("node mac1") && text.contains("`a4:83:e7:00:11`"),
        "{text}"
    );
}

#[test]
fn resume__bad_or_missing_broadcast_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let map = write_map(
        dir.path(),
        "broadcast = \"192.168.1.255\"\n[node.mac1]\nmac = \"a4:83:e7:00:11:22\"\n",
    );
    let err = run(&args(Action::Resume, "mac1", map)).expect_err("no port");
    assert!(matches!(err, PowerError::BadBroadcast { .. }), "{err}");
    let map = write_map(dir.path(), "[node.mac1]\nmac = \"a4:83:e7:00:11:22\"\n");
    let err = run(&args(Action::Resume, "mac1", map)).expect_err("no broadcast");
    assert!(matches!(err, PowerError::NoBroadcast { .. }), "{err}");
}

#[test]
fn suspend__runs_each_nodes_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver();
    let record = dir.path().join("asked");
    let cmd = format!(
        "[\"sh\", \"-c\", \"echo sleepnow >> {}\"]",
        record.display()
    );
    let map = two_nodes(dir.path(), &r, &cmd);
    run(&args(Action::Suspend, "mac1", map)).expect("suspend");
    assert_eq!(
        std::fs::read_to_string(&record).expect("the command ran"),
        "sleepnow\n"
    );
}

#[test]
fn suspend__failing_command_and_missing_command_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver();
    let map = two_nodes(
        dir.path(),
        &r,
        "[\"sh\", \"-c\", \"echo no route >&2; exit 3\"]",
    );
    let err = run(&args(Action::Suspend, "mac1", map)).expect_err("exit 3");
    let text = err.to_string();
    assert!(
        text.contains("node mac1") && text.contains("no route"),
        "{text}"
    );

    let record = dir.path().join("asked");
    let to = r.local_addr().expect("address");
    let map = write_map(
        dir.path(),
        &format!(
            "broadcast = \"{to}\"\n[node.mac1]\nmac = \"a4:83:e7:00:11:22\"\n\
             suspend = [\"sh\", \"-c\", \"echo ran >> {}\"]\n\
             [node.mac2]\nmac = \"a4:83:e7:00:11:33\"\n",
            record.display()
        ),
    );
    let err = run(&args(Action::Suspend, "mac1,mac2", map)).expect_err("mac2 has none");
    assert!(
        matches!(err, PowerError::NoSuspend { ref node, .. } if node == "mac2"),
        "{err}"
    );
    assert!(
        !record.exists(),
        "mac1 was suspended although the call was refused"
    );
}

#[test]
fn hosts__brackets_go_to_scontrol_show_hostnames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let asked = dir.path().join("asked");
    let stub = dir.path().join("scontrol");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\necho \"$@\" > {}\nprintf 'mac1\\nmac2\\nmac3\\n'\n",
            asked.display()
        ),
    )
    .expect("write stub");
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let names = hosts::expand("mac[1-3]", &stub, Duration::from_secs(10)).expect("expand");
    assert_eq!(names, ["mac1", "mac2", "mac3"]);
    assert_eq!(
        std::fs::read_to_string(&asked).expect("stub ran"),
        "show hostnames mac[1-3]\n"
    );
    assert_eq!(hosts::plain("mac1, mini"), ["mac1", "mini"]);
    let err = hosts::expand(" , ", &stub, Duration::from_secs(10)).expect_err("empty");
    assert!(matches!(err, PowerError::NoNodes(_)), "{err}");
    let missing = dir.path().join("no-scontrol");
    let err = hosts::expand("mac[1-3]", &missing, Duration::from_secs(10)).expect_err("missing");
    assert!(err.to_string().contains("--scontrol"), "{err}");
}
