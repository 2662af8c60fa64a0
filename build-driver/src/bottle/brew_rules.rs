//! One test per Homebrew rule the generated tap must keep. Each names the Homebrew/brew file
//! it encodes, read at commit aad366ffaf6a8c94c66d35e4b990d42ac4195305 (tag 6.0.18 + 157,
//! 2026-08-22; `[B] path` below). brew itself cannot run here (it needs Ruby 4 and gems):
//! `ci/macos-arm64.yml` runs `brew style`, `brew audit --strict --new`, `brew readall` and the
//! installs on a Mac.

use super::*;

fn pin_of(v: &str) -> driver_common::pins::Pin {
    pinned(&crate::project_root(), v).unwrap()
}

/// The main formula as the tap writes it, with an arm64 and an Intel bottle.
fn main_formula() -> String {
    let layout = Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap();
    let source = source_of(&pin_of("24.11.5")).unwrap();
    let bottles = [
        ("arm64_sonoma".to_string(), "a".repeat(64)),
        ("sonoma".to_string(), "b".repeat(64)),
    ];
    formula::render(&formula::Spec {
        layout: &layout,
        source: &source,
        project_git: PROJECT_GIT,
        project_commit: "0123456789abcdef0123456789abcdef01234567",
        bottles: &bottles,
        root_url: Some("https://example.org/bottles"),
    })
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
        f.contains("  bottle do\n    root_url \"https://example.org/bottles\"\n"),
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
        assert!(post.contains(d), "post_install lacks {d}:\n{post}");
        assert!(!method(&f, "install").contains(d), "install makes {d}");
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
/// whose URL carries none (a git URL with a revision).
#[test]
fn brew_rule__every_resource_has_a_version() {
    let f = main_formula();
    let r = resources(&f);
    assert!(!r.is_empty());
    for (name, body) in r {
        let url_has_version = body.contains(".tar.");
        assert!(
            url_has_version || body.contains("\n    version \""),
            "resource {name} has no version:\n{body}"
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
