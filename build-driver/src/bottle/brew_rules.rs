//! One test per Homebrew rule the generated tap must keep. Each names the Homebrew/brew file
//! it encodes, read at commit aad366ffaf6a8c94c66d35e4b990d42ac4195305 (tag 6.0.18 + 157,
//! 2026-08-22; `[B] path` below). brew itself cannot run here (it needs Ruby 4 and gems):
//! `ci/macos-arm64.yml` runs `brew style`, `brew audit --strict --new`, `brew readall` and the
//! installs on a Mac.

use super::*;

const ROOT_URL: &str = "https://example.org/bottles";
const TAP: &str = "example/slurm";

fn args(out: &Path) -> crate::bottle::tap::TapArgs {
    crate::bottle::tap::TapArgs {
        tap: TAP.into(),
        root_url: ROOT_URL.into(),
        bottles: None,
        out: Some(out.to_path_buf()),
        debian_mirror: Some("http://mirror.example/debian".into()),
        git: false,
    }
}

/// What two `.bottle.json` files (arm64, Intel) say.
fn bottled() -> Vec<tap::Bottled> {
    ["aarch64-apple-darwin", "x86_64-apple-darwin"]
        .iter()
        .zip(['a', 'b'])
        .map(|(t, c)| {
            let l = Layout::new(FORMULA, "24.11.5", "24.11", t).unwrap();
            tap::Bottled {
                version: l.version.clone(),
                root_url: Some(ROOT_URL.into()),
                tap: Some(TAP.into()),
                tag: l.tag.into(),
                sha256: c.to_string().repeat(64),
                filename: l.url_name(),
                local_filename: l.bottle_name(),
            }
        })
        .collect()
}

/// The tap `cargo xtask tap` writes for [`bottled`], in a scratch directory.
fn tap_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let a = args(d.path());
    let r = tap::dep_resources(&crate::project_root(), a.debian_mirror.as_deref()).unwrap();
    tap::write(&crate::project_root(), &a, &bottled(), &r, d.path()).unwrap();
    d
}

/// The main formula of that tap.
fn main_formula() -> String {
    std::fs::read_to_string(tap_dir().path().join("Formula/slurm-wlm.rb")).unwrap()
}

/// The text of `def <name>` up to its `end` at two spaces.
fn method(text: &str, name: &str) -> String {
    let start = text
        .find(&format!("  def {name}\n"))
        .unwrap_or_else(|| panic!("no `def {name}` in\n{text}"));
    let rest = &text[start..];
    let end = rest.find("\n  end\n").map(|e| e + 7).unwrap_or(rest.len());
    rest[..end].to_string()
}

/// `resource "<name>" do ... end` blocks: (name, body).
fn resources(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("  resource \"") {
        let after = &rest[i + 12..];
        let name = after[..after.find('"').unwrap()].to_string();
        let end = after.find("\n  end\n").unwrap();
        out.push((name, after[..end].to_string()));
        rest = &after[end..];
    }
    out
}

/// [B] Library/Homebrew/bottle_specification.rb `root_url`: without one, a bottle's URL is
/// under `HOMEBREW_BOTTLE_DOMAIN` (homebrew/core's packages), where ours is not: a tap's
/// `bottle do` must name its own `root_url`.
#[test]
fn brew_rule__bottle_block_names_its_root_url() {
    let f = main_formula();
    assert!(
        f.contains(&format!("  bottle do\n    root_url \"{ROOT_URL}\"\n")),
        "{f}"
    );
}

/// [B] Library/Homebrew/formula_installer.rb (pour: `def install` is not run) and
/// docs/Formula-Cookbook.md: directories under `var` come from the post-install step
/// (`post_install`; `rubocops/install_steps.rb` refuses it only in official taps).
#[test]
fn brew_rule__var_directories_made_after_pouring_too() {
    let f = main_formula();
    let post = method(&f, "post_install");
    for d in ["var/\"log/slurm\"", "var/\"spool/slurmd\""] {
        let mkpath = format!("({d}).mkpath");
        assert!(
            post.contains(&mkpath),
            "post_install lacks {mkpath}:\n{post}"
        );
        assert!(
            !method(&f, "install").contains(&mkpath),
            "install makes {d}"
        );
    }
}

/// [B] Library/Homebrew/formula.rb `launchd_service_path` and services/formula_wrapper.rb:
/// `service do name macos:` without `run` copies `opt_prefix/<label>.plist`; a source build
/// (and every formula the bottle's keg assembly did not make) must write that file itself.
#[test]
fn brew_rule__source_build_installs_the_service_plist() {
    let f = main_formula();
    let install = method(&f, "install");
    assert!(
        install.contains("\"service\", \"print\"")
            && install.contains("(prefix/\"#{label}.plist\").write"),
        "{install}"
    );
}

/// [B] Library/Homebrew/resource_auditor.rb `audit_version`: "Missing version" for a resource
/// whose URL carries none (a git URL with a revision, `json-c_0.18+ds.orig`), and a `version`
/// equal to the one brew reads from the URL is "redundant" (version.rb reads
/// `<name>_<version>.orig.tar.*`).
#[test]
fn brew_rule__every_resource_has_a_version() {
    let f = main_formula();
    let r = resources(&f);
    assert!(!r.is_empty());
    for (name, body) in r {
        let url = body
            .lines()
            .find(|l| l.trim_start().starts_with("url "))
            .unwrap();
        let from_url = url
            .rsplit('/')
            .next()
            .and_then(|file| file.split_once('_'))
            .and_then(|(_, v)| v.split_once(".orig.tar."))
            .is_some_and(|(v, _)| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
        let explicit = body.contains("\n    version \"");
        assert!(
            from_url ^ explicit,
            "resource {name}: version missing or redundant:\n{body}"
        );
    }
}

/// [B] docs/Formula-Cookbook.md (resources: `url` and `sha256`) and
/// Library/Homebrew/formula_installer.rb (resources are fetched and verified before
/// `install`): every third-party tarball of slurm-src/deps.toml is a resource with its
/// sha256; `install` reads no environment variable for a mirror and downloads nothing.
#[test]
fn brew_rule__third_party_sources_are_resources_with_sha256() {
    let f = main_formula();
    let r = resources(&f);
    let deps = crate::deps::pins::DepPins::load(&crate::project_root()).unwrap();
    for lib in deps.libs.iter().filter(|l| l.tarball.is_some()) {
        let t = lib.tarball.as_ref().unwrap();
        let (_, body) = r
            .iter()
            .find(|(n, _)| n == &lib.name)
            .unwrap_or_else(|| panic!("no resource {}:\n{f}", lib.name));
        assert!(body.contains(&format!("sha256 \"{}\"", t.sha256)), "{body}");
        assert!(body.contains(&format!("/{}\"", t.file)), "{body}");
    }
    let install = method(&f, "install");
    for bad in ["ENV", "--debian-mirror", "odie", "curl"] {
        assert!(!install.contains(bad), "install uses {bad}:\n{install}");
    }
}

/// [B] Library/Homebrew/rubocops/conflicts.rb (reason lower-case, no period) and
/// Library/Homebrew/formula_installer.rb `check_conflicts`: homebrew-core's `slurm` (a network
/// monitor) installs `share/man/man1/slurm.1`, as Slurm does.
#[test]
fn brew_rule__conflicts_with_cores_slurm() {
    let f = main_formula();
    let line = f
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("conflicts_with \"slurm\", because: \"")
        })
        .unwrap_or_else(|| panic!("no conflicts_with \"slurm\":\n{f}"));
    let reason = line.split("because: \"").nth(1).unwrap();
    assert!(reason.starts_with(|c: char| c.is_ascii_lowercase()) && !reason.ends_with(".\""));
}

/// [B] Library/Homebrew/extend/ENV/super.rb `determine_path`: a build's PATH holds only the
/// declared dependencies' bin directories (and the system's); json-c, jansson and libjwt are
/// `build = "cmake"` in slurm-src/deps.toml.
#[test]
fn brew_rule__cmake_is_a_build_dependency() {
    let f = main_formula();
    assert!(f.contains("  depends_on \"cmake\" => :build\n"), "{f}");
}

/// [B] Library/Homebrew/utils/spdx.rb (`license "X" => { with: "E" }`) and
/// data/spdx/spdx_exceptions.json (list 3.28.0): Slurm's LICENSE.OpenSSL grants the
/// exception worded as SPDX's `cryptsetup-OpenSSL-exception` ("link the code of portions of
/// this program with the OpenSSL library under certain conditions as described in each
/// individual source file"); `openvpn-openssl-exception` is OpenVPN's other wording.
#[test]
fn brew_rule__license_is_gpl2_plus_with_slurms_openssl_exception() {
    let f = main_formula();
    assert!(
        f.contains(
            "  license \"GPL-2.0-or-later\" => { with: \"cryptsetup-OpenSSL-exception\" }\n"
        ),
        "{f}"
    );
}

/// [B] docs/Brew-Livecheck.md and Library/Homebrew/livecheck/strategy/git.rb: a `livecheck`
/// block on upstream's tags (`slurm-X-Y-Z-1`).
#[test]
fn brew_rule__livecheck_reads_upstreams_tags() {
    let f = main_formula();
    assert!(
        f.contains("  livecheck do\n") && f.contains("strategy :git"),
        "{f}"
    );
}

/// [B] docs/Formula-Cookbook.md ("test do": a test that exercises the program, not only
/// `--version`): the test loads a plugin (gres/gpu through `slurmd -G` on a generated
/// slurm.conf and gres.conf), besides `slurmd -C`.
#[test]
fn brew_rule__test_loads_a_plugin() {
    let f = main_formula();
    let test = &f[f.find("  test do\n").unwrap()..];
    assert!(
        test.contains("gres.conf") && test.contains("slurmd -G"),
        "{test}"
    );
}

/// Issue 23 (not a Homebrew rule: the project's): a Mac that poured the bottle or built
/// the formula needs no checkout and no Rust. The source build installs the node tool as
/// the bottle has it, the caveats name `slurm-mac`, never `cargo xtask`, and the test runs
/// the node tool against the keg.
#[test]
fn formula__node_tool_installed_and_caveats_need_no_checkout() {
    let f = main_formula();
    let install = method(&f, "install");
    assert!(
        install.contains("bin.install \"target/release/slurm-mac\""),
        "{install}"
    );
    let caveats = method(&f, "caveats");
    assert!(
        !caveats.contains("cargo") && caveats.contains("#{opt_bin}/slurm-mac"),
        "{caveats}"
    );
    let test = &f[f.find("  test do\n").unwrap()..];
    assert!(test.contains("#{bin}/slurm-mac doctor"), "{test}");
}

/// Issue 23 (the project's rule: root never runs a file a non-root user can change): the
/// plist `service do` copies (source build and bottle alike) runs the root-owned copy of the
/// keg (`slurm-mac copy-keg`), never `opt_prefix`, whose files the admin user owns; the
/// formula's `slurm_root` is the node tool's default root for both Homebrew prefixes, and the
/// caveats make the copy before any service starts.
#[test]
fn formula__launchdaemon_runs_the_root_owned_copy_not_the_keg() {
    let f = main_formula();
    let root = method(&f, "slurm_root");
    let (arm, intel) = (
        slurm_mac::keg::default_root("/opt/homebrew").unwrap(),
        slurm_mac::keg::default_root("/usr/local").unwrap(),
    );
    assert!(
        root.contains(&format!(
            "HOMEBREW_PREFIX.to_s == \"/usr/local\" ? \"{intel}\" : \"{arm}\""
        )),
        "{root}"
    );
    let install = method(&f, "install");
    assert!(
        install.contains("\"--prefix\", \"#{slurm_root}/opt/#{name}\"")
            && !install.contains("opt_prefix"),
        "{install}"
    );
    let readme = std::fs::read_to_string(tap_dir().path().join("README.md")).unwrap();
    let (copy, start) = (readme.find("copy-keg"), readme.find("brew services start"));
    assert!(copy.is_some() && copy < start, "{readme}");
    let caveats = method(&f, "caveats");
    let copy = caveats
        .find("copy-keg --keg #{opt_prefix}")
        .expect("no copy-keg in caveats");
    let start = caveats
        .find("brew services start")
        .expect("no brew services");
    assert!(copy < start, "{caveats}");
    assert!(
        !caveats.contains("--prefix #{opt_prefix}"),
        "a command of the caveats runs the keg as root: {caveats}"
    );
}

/// [B] Library/Homebrew/ast_constants.rb `FORMULA_COMPONENT_PRECEDENCE_LIST` (checked by
/// rubocops/components_order.rb): stanzas in Homebrew's order.
#[test]
fn brew_rule__components_in_homebrews_order() {
    let f = main_formula();
    let order = [
        "  desc ",
        "  homepage ",
        "  url ",
        "  version ",
        "  sha256 ",
        "  license ",
        "  livecheck do",
        "  bottle do",
        "  pour_bottle?",
        "  depends_on ",
        "  conflicts_with ",
        "  resource ",
        "  def install",
        "  def post_install",
        "  def caveats",
        "  test do",
    ];
    let mut last = 0;
    for o in order {
        let at = f.find(o).unwrap_or_else(|| panic!("no {o:?} in\n{f}"));
        assert!(at >= last, "{o:?} out of order");
        last = at;
    }
}

/// [B] Library/Homebrew/env_config.rb (`HOMEBREW_FORBID_PACKAGES_FROM_PATHS` on unless
/// `HOMEBREW_DEVELOPER`) and formulary.rb (`FromPathLoader`/`FromBottleLoader` return nothing
/// then): a third-party formula is installed from a tap, `Formula/<name>.rb` in it
/// (tap.rb `formula_dir`); the README says `brew tap` and `brew install ORG/REPO/slurm-wlm`.
#[test]
fn brew_rule__formulae_come_from_a_tap_directory() {
    let d = tap_dir();
    assert!(d.path().join("Formula/slurm-wlm.rb").is_file());
    let readme = std::fs::read_to_string(d.path().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("brew tap {TAP} "))
            && readme.contains(&format!("brew install {TAP}/slurm-wlm")),
        "{readme}"
    );
    let e = tap::check_tap_name("example/homebrew-slurm")
        .unwrap_err()
        .to_string();
    assert!(e.contains("ORG/REPO"), "{e}");
    tap::check_tap_name(TAP).unwrap();
}

/// [B] Library/Homebrew/dev-cmd/bottle.rb (`--merge`: one `bottle do` with every tag's
/// sha256) and rubocops/components_order.rb (one `bottle` block): an arm64 and an Intel
/// bottle give one block with both, arm64 first.
#[test]
fn brew_rule__one_bottle_block_with_every_tag() {
    let f = main_formula();
    assert_eq!(f.matches("  bottle do\n").count(), 1, "{f}");
    let arm = f.find(&format!("sha256 arm64_sonoma: \"{}\"", "a".repeat(64)));
    let intel = f.find(&format!("sha256 sonoma: \"{}\"", "b".repeat(64)));
    assert!(arm.is_some() && intel.is_some() && arm < intel, "{f}");
}

/// [B] docs/Versions.md (a versioned formula is for an older or newer line than the main
/// formula's, keg-only) and rubocops/conflicts.rb (a versioned formula uses no
/// `conflicts_with`); services/formula_wrapper.rb: each formula its own service label.
#[test]
fn brew_rule__versioned_formulae_only_for_other_lines_with_their_own_label() {
    let d = tap_dir();
    let main = std::fs::read_to_string(d.path().join("Formula/slurm-wlm.rb")).unwrap();
    assert!(!d.path().join("Formula/slurm-wlm@24.11.rb").exists());
    let mut seen = 0;
    for line in ["25.05", "25.11", "26.05"] {
        let p = d.path().join(format!("Formula/slurm-wlm@{line}.rb"));
        let f = std::fs::read_to_string(&p).unwrap_or_else(|_| panic!("{}", p.display()));
        assert!(f.contains(&format!("  version \"{line}.")), "{f}");
        assert!(f.contains("keg_only :versioned_formula") && !f.contains("conflicts_with"));
        let label = format!("name macos: \"org.slurm-on-mac.slurmd-{line}\"");
        assert!(f.contains(&label) && !main.contains(&label), "{f}");
        let install = method(&f, "install");
        assert!(
            install.contains(&format!("label = \"org.slurm-on-mac.slurmd-{line}\"")),
            "{install}"
        );
        assert!(!f.contains("bottle do"));
        seen += 1;
    }
    assert_eq!(seen, 3);
}

/// [B] Library/Homebrew/tab/tab.rb (`source.tap` is the formula's tap) and
/// formula_installer.rb (a poured keg's tab says which tap it came from): the receipt names
/// the tap, not `null`.
#[test]
fn brew_rule__receipt_names_the_tap() {
    let l = Layout {
        tap: TAP.into(),
        ..Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap()
    };
    assert_eq!(receipt::tab(&l, &[], 0)["source"]["tap"], TAP);
    let default = Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap();
    assert_eq!(receipt::tab(&default, &[], 0)["source"]["tap"], DEFAULT_TAP);
}

/// [B] Library/Homebrew/dev-cmd/bottle.rb (`--json`): keyed by the formula's full name,
/// `date` an RFC 3339 time (`Time#utc.iso8601`), `root_url`, the license as SPDX writes it,
/// `filename` the name under `root_url` (bottle.rb `Filename#url_encode`:
/// `<name>-<version>.<tag>.bottle.tar.gz`) and `local_filename` brew's local one (`--`).
#[test]
fn brew_rule__bottle_json_has_brews_shape() {
    let d = tempfile::tempdir().unwrap();
    crate::testing::write(&d.path().join("sbin/slurmd"), "x");
    let l = Layout {
        tap: TAP.into(),
        root_url: Some(ROOT_URL.into()),
        ..Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap()
    };
    let text = receipt::bottle_json(&l, d.path(), &"c".repeat(64), &[], DEFAULT_EPOCH).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let f = &v[format!("{TAP}/slurm-wlm")];
    assert_eq!(f["bottle"]["date"], "2024-01-01T00:00:00Z");
    assert_eq!(f["bottle"]["root_url"], ROOT_URL);
    assert_eq!(f["formula"]["license"], formula::LICENSE_SPDX);
    let t = &f["bottle"]["tags"]["arm64_sonoma"];
    assert_eq!(
        t["filename"],
        "slurm-wlm-24.11.5.arm64_sonoma.bottle.tar.gz"
    );
    assert_eq!(
        t["local_filename"],
        "slurm-wlm--24.11.5.arm64_sonoma.bottle.tar.gz"
    );
    assert_eq!(
        receipt::rfc3339(951_782_400 + 86_399),
        "2000-02-29T23:59:59Z"
    );
    // What the tap reads back from it.
    let p = d.path().join("x.bottle.json");
    std::fs::write(&p, &text).unwrap();
    let b = tap::read_bottle_json(&p).unwrap();
    assert_eq!(
        (b[0].tap.as_deref(), b[0].root_url.as_deref()),
        (Some(TAP), Some(ROOT_URL))
    );
}

/// The tap refuses bottles made for another tap or root_url (their receipts and JSON would
/// disagree with the formula).
#[test]
fn tap__refuses_bottles_made_for_another_root_url() {
    let d = tempfile::tempdir().unwrap();
    crate::testing::write(&d.path().join("keg/sbin/slurmd"), "x");
    let l = Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap();
    let text = receipt::bottle_json(&l, &d.path().join("keg"), &"c".repeat(64), &[], 0).unwrap();
    std::fs::write(d.path().join(l.json_name()), text).unwrap();
    let e = tap::collect(d.path(), DEFAULT_TAP, ROOT_URL)
        .unwrap_err()
        .to_string();
    crate::testing::assert_mentions(&e, &["root_url None", "--root-url"]);
    let e = tap::collect(&d.path().join("keg"), TAP, ROOT_URL)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no *.bottle.json"), "{e}");
    let e = tap::dep_resources(&crate::project_root(), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--debian-mirror"), "{e}");
}

/// Ruby parses every file of the tap (`brew readall` loads each formula; it needs brew).
#[test]
fn tap__ruby_parses_every_formula() {
    let d = tap_dir();
    let sh = Shell::new().unwrap();
    if !crate::testing::have(&sh, &["ruby"]) {
        println!("ruby not installed: the tap's syntax is not checked");
        return;
    }
    let mut n = 0;
    for rel in driver_common::util::fs::walk_files(&d.path().join("Formula")).unwrap() {
        let p = d.path().join("Formula").join(rel);
        let o = xshell::cmd!(sh, "ruby -c {p}").quiet().read().unwrap();
        assert!(o.contains("Syntax OK"), "{}: {o}", p.display());
        n += 1;
    }
    assert_eq!(n, 4);
}
