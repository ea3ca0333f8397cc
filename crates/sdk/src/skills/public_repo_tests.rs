//! The public repository's clone for `load_public_skills`, against a local
//! bare repository: cloned, pinned on a tag, refreshed on a branch, the
//! cached copy used offline, a clear error without one.
#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;

use crate::test_git::git;

/// A work repository with one skill, pushed to a bare `remote.git`.
fn remote(root: &Path) -> (PathBuf, PathBuf) {
    let work = root.join("work");
    std::fs::create_dir_all(work.join("skills/github")).unwrap();
    std::fs::write(
        work.join("skills/github/SKILL.md"),
        "---\nname: github\ndescription: Working with GitHub\n---\nUse gh.\n",
    )
    .unwrap();
    git(&work, &["init", "--quiet"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", "one"]);
    git(&work, &["tag", "v1"]);
    let bare = root.join("remote.git");
    git(
        root,
        &[
            "clone",
            "--quiet",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    (work, bare)
}

fn cached(bare: &Path, git_ref: &str, dir: &Path) -> PublicRepo {
    PublicRepo::Cached {
        url: bare.to_string_lossy().into_owned(),
        git_ref: git_ref.into(),
        dir: dir.to_path_buf(),
    }
}

#[tokio::test]
async fn clones_pins_refreshes_and_falls_back_to_the_cache() {
    let root = tempfile::tempdir().unwrap();
    let (work, bare) = remote(root.path());
    let env = EnvPolicy::default();
    let first = git(&work, &["rev-parse", "HEAD"]);

    // A branch: cloned, the commit recorded.
    let dir = root.path().join("cache/main");
    let repo = cached(&bare, "main", &dir);
    let copy = repo.for_skills(&env).await.unwrap();
    assert!(dir.join("skills/github/SKILL.md").is_file());
    let out = copy.checked_out.unwrap();
    assert_eq!((out.commit.as_str(), out.pinned), (first.as_str(), false));

    // A new commit upstream: seen once the refresh is due.
    std::fs::write(
        work.join("skills/github/SKILL.md"),
        "---\nname: github\ndescription: d\n---\nTwo.\n",
    )
    .unwrap();
    git(&work, &["commit", "--quiet", "-am", "two"]);
    git(&work, &["push", "--quiet", bare.to_str().unwrap(), "main"]);
    let second = git(&work, &["rev-parse", "HEAD"]);
    let within_ttl = repo.for_skills(&env).await.unwrap();
    assert_eq!(
        within_ttl.checked_out.unwrap().commit,
        first,
        "not refetched within the TTL"
    );
    mark_refreshed(&dir, None);
    let refreshed = repo.for_skills(&env).await.unwrap();
    assert_eq!(refreshed.checked_out.unwrap().commit, second);

    // A tag is pinned: never fetched again, even with the remote gone.
    let tag_dir = root.path().join("cache/tag");
    let tagged = cached(&bare, "v1", &tag_dir);
    let pinned = tagged.for_skills(&env).await.unwrap().checked_out.unwrap();
    assert_eq!(
        (pinned.commit.as_str(), pinned.pinned),
        (first.as_str(), true)
    );

    std::fs::rename(&bare, root.path().join("moved.git")).unwrap();
    mark_refreshed(&tag_dir, None);
    let offline_pinned = tagged.for_skills(&env).await.unwrap();
    assert_eq!(offline_pinned.stale, None, "a pinned copy needs no fetch");

    // Offline on a branch: the cached copy, and why it is stale.
    mark_refreshed(&dir, None);
    let stale = repo.for_skills(&env).await.unwrap();
    assert!(stale.stale.is_some());
    assert!(dir.join("skills/github/SKILL.md").is_file());

    // Offline with nothing cached: an error naming the remote and the ref.
    let empty = cached(&bare, "main", &root.path().join("cache/none"));
    let err = empty.for_skills(&env).await.unwrap_err().to_string();
    assert!(
        err.contains("remote.git") && err.contains("'main'"),
        "{err}"
    );
    assert!(err.contains("no copy is cached"), "{err}");
}
