//! Bad input to a root command: a missing or non-Slurm prefix, a missing map or conf gets
//! one clear error naming it and the fix; nothing is started or written.

use super::kit::*;

#[test]
fn bad_input__missing_or_non_slurm_prefix_is_named_and_nothing_happens() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let key = k.key();
    let empty = k.dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = k.dir.path().join("missing");
    let daemons = k.dir.path().join("LaunchDaemons");
    std::fs::create_dir(&daemons).unwrap();
    let l = k.dir.path().join("launchctl");
    k.stand_in(&l);
    for prefix in [&missing, &empty] {
        let p = prefix.to_str().unwrap();
        for args in [
            vec![
                "join",
                "--prefix",
                p,
                "--controller",
                "127.0.0.1:9",
                "--key",
                key.to_str().unwrap(),
                "--apply",
            ],
            vec!["gres-conf", "--prefix", p],
            vec![
                "service",
                "install",
                "--prefix",
                p,
                "--log-dir",
                k.dir.path().join("log").to_str().unwrap(),
                "--launchd-dir",
                daemons.to_str().unwrap(),
                "--launchctl",
                l.to_str().unwrap(),
            ],
        ] {
            let o = k.run(&args);
            let t = text(&o);
            assert!(!o.status.success(), "{args:?}: exit 0\n{t}");
            assert!(t.contains(p), "{args:?}: the prefix is not named\n{t}");
            assert!(
                t.contains("fix") || t.contains("pass"),
                "{args:?}: no fix\n{t}"
            );
            assert!(k.ran().is_empty(), "{args:?}: ran {:?}", k.ran());
            assert!(
                !k.dir.path().join("log").exists(),
                "{args:?}: made the log directory"
            );
            assert_eq!(
                std::fs::read_dir(&daemons).unwrap().count(),
                0,
                "{args:?}: wrote a plist"
            );
            assert!(
                !prefix.join("etc").exists(),
                "{args:?}: wrote into the prefix"
            );
        }
    }
    // A map or a conf that does not exist is named.
    let o = k.run(&[
        "power",
        "resume",
        "mac1",
        "--map",
        missing.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains(missing.to_str().unwrap()),
        "{}",
        text(&o)
    );
    let o = k.run(&[
        "join",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--conf",
        missing.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains(missing.to_str().unwrap()),
        "{}",
        text(&o)
    );
    assert!(k.ran().is_empty(), "{:?}", k.ran());
}
