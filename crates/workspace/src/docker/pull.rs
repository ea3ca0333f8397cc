//! Making sure an image is on the daemon: used as it is when present,
//! pulled otherwise (as `docker run` does), and a clear error naming the
//! image and the registry's answer when it can be neither.

use super::client::is_not_found;
use super::error::DockerError;
use bollard::Docker;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures::StreamExt;
use std::time::Duration;

/// Splits `image` into the pull's `fromImage` and `tag` (`latest` when
/// none is given; a digest reference is passed whole).
pub fn pull_reference(image: &str) -> (String, Option<String>) {
    if image.contains('@') {
        return (image.to_string(), None);
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => {
            let name = &image[..image.len() - tag.len() - 1];
            (name.to_string(), Some(tag.to_string()))
        }
        None => (image.to_string(), Some("latest".into())),
    }
}

/// Makes sure `image` is on the daemon: returns at once when it is there,
/// pulls it (for `platform`, when given) otherwise. The inspection takes
/// at most `timeout`, the pull at most `pull_timeout`.
pub async fn ensure_present(
    docker: &Docker,
    image: &str,
    platform: Option<&str>,
    timeout: Duration,
    pull_timeout: Duration,
) -> Result<(), DockerError> {
    match tokio::time::timeout(timeout, docker.inspect_image(image)).await {
        Ok(Ok(_)) => return Ok(()),
        Ok(Err(e)) if is_not_found(&e) => {}
        Ok(Err(e)) => {
            return Err(DockerError::Daemon {
                op: "image inspect",
                detail: e.to_string(),
            });
        }
        Err(_) => {
            return Err(DockerError::Timeout {
                op: "image inspect",
                after: timeout,
            });
        }
    }
    let (from, tag) = pull_reference(image);
    let mut opts = CreateImageOptionsBuilder::new().from_image(&from);
    if let Some(tag) = &tag {
        opts = opts.tag(tag);
    }
    if let Some(p) = platform {
        opts = opts.platform(p);
    }
    let pull = async {
        let mut progress = docker.create_image(Some(opts.build()), None, None);
        while let Some(item) = progress.next().await {
            let info = item.map_err(|e| e.to_string())?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err(err);
            }
        }
        Ok(())
    };
    let missing = |detail: String| DockerError::ImageMissing {
        image: image.to_string(),
        detail,
    };
    match tokio::time::timeout(pull_timeout, pull).await {
        Ok(Ok(())) => {}
        Ok(Err(detail)) => return Err(missing(detail)),
        Err(_) => {
            return Err(missing(format!(
                "the pull did not finish within {pull_timeout:?}"
            )));
        }
    }
    // A pull that "succeeded" without producing the image (a platform
    // mismatch on an old daemon) is still a missing image.
    match tokio::time::timeout(timeout, docker.inspect_image(image)).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err(missing("the pull ended without the image".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::pull_reference;

    #[test]
    fn references_split_into_name_and_tag() {
        let r = |s: &str| pull_reference(s);
        assert_eq!(r("alpine"), ("alpine".into(), Some("latest".into())));
        assert_eq!(r("alpine:3.19"), ("alpine".into(), Some("3.19".into())));
        assert_eq!(
            r("localhost:5000/a/b:v1"),
            ("localhost:5000/a/b".into(), Some("v1".into()))
        );
        assert_eq!(
            r("localhost:5000/a/b"),
            ("localhost:5000/a/b".into(), Some("latest".into()))
        );
        assert_eq!(r("a/b@sha256:00"), ("a/b@sha256:00".into(), None));
    }
}
