//! Attacks on `join`: names that would change slurm.conf or slurmd's command line, host:port
//! strings parsed loosely, and a slurmd that another user can replace.

use super::ask::Controller;
use super::plan::{Inputs, Plan, Shape};

fn inputs(name: &str, shape: Shape) -> Inputs {
    Inputs {
        slurmd: "/opt/slurm/sbin/slurmd".into(),
        etc: "/opt/slurm/etc".into(),
        key: "/opt/slurm/etc/slurm.key".into(),
        conf_server: Some("ctl:6817".into()),
        local_conf: None,
        shape,
        node_name: name.into(),
        hardware: Some("NodeName=x CPUs=8 RealMemory=1000".into()),
    }
}

fn fixed(addr: &str) -> Shape {
    Shape::Fixed {
        node_addr: addr.into(),
    }
}

fn dynamic(f: &str) -> Shape {
    Shape::Dynamic { features: f.into() }
}

/// The plan, or `None` when its inputs are refused.
fn planned(i: &Inputs) -> Option<Plan> {
    super::plan_checked(i)
}

#[test]
fn plan__attack_newline_in_name_cannot_add_a_slurm_conf_line() {
    let p = planned(&inputs(
        "mac\nPartitionName=all Nodes=ALL",
        fixed("192.0.2.7"),
    ));
    if let Some(p) = p {
        let text = p.render();
        assert!(
            !text.lines().any(|l| l.starts_with("PartitionName")),
            "a live line was printed:\n{text}"
        );
    }
}

#[test]
fn plan__attack_parameters_in_addr_or_features_are_refused() {
    let p = planned(&inputs("mac1", fixed("1.2.3.4 Weight=1")));
    assert!(p.is_none_or(|p| !p.controller_line.unwrap().contains("Weight=1")));
    let p = planned(&inputs("mac1", dynamic("a RealMemory=999999")));
    assert!(p.is_none_or(|p| !p.slurmd.iter().any(|a| a.contains("RealMemory"))));
}

#[test]
fn plan__attack_name_starting_with_a_dash_is_not_an_option() {
    let p = planned(&inputs("-Z", dynamic("macos")));
    assert!(p.is_none(), "{:?}", p.map(|p| p.slurmd));
}

#[test]
fn controller__attack_trailing_garbage_and_unbracketed_ipv6_port_are_refused() {
    for bad in ["[::1]x", "ctl:6817:1", "ctl x", "-ctl", "[::1]:"] {
        let r = Controller::parse(bad);
        assert!(r.is_err(), "{bad} became {:?}", r.map(|c| c.conf_server()));
    }
    assert_eq!(
        Controller::parse("[::1]:7000").unwrap().conf_server(),
        "[::1]:7000"
    );
    assert_eq!(
        Controller::parse("::1").unwrap().conf_server(),
        "[::1]:6817"
    );
}

#[test]
fn join__attack_timeout_beyond_the_clock_is_refused_by_the_parser() {
    use clap::Parser;
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: crate::join::JoinArgs,
    }
    let r = T::try_parse_from([
        "t",
        "--prefix",
        "/p",
        "--controller",
        "c",
        "--timeout",
        "18446744073709551615",
    ]);
    assert!(r.is_err(), "a timeout past the clock was accepted");
    assert!(
        T::try_parse_from(["t", "--prefix", "/p", "--controller", "c", "--timeout", "0"]).is_err()
    );
}

#[test]
fn apply__attack_slurmd_writable_by_others_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let (d, _) = driver_common::testing::scratch("x");
    let prog = d.path().join("sbin/slurmd");
    std::fs::create_dir(d.path().join("sbin")).unwrap();
    let marker = d.path().join("ran");
    std::fs::write(&prog, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o777)).unwrap();
    let plan = Plan {
        installs: vec![],
        slurmd: vec![prog.display().to_string()],
        controller_line: None,
    };
    let r = super::write::apply(&plan);
    assert!(!marker.exists(), "a world-writable slurmd ran");
    assert!(r.unwrap_err().to_string().contains("writable"));
}
