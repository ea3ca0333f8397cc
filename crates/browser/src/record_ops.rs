//! Recording on a running browser: start, stop, taking the current page's
//! events, and restarting the recorder after the page changed (the
//! reference's `recording_aware` navigation actions).

use crate::error::BrowserError;
use crate::recording::{self, Recording, Started};
use crate::running::Running;
use std::time::Duration;

/// How long taking events from a page may take in the background.
const TAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// `browser_start_recording`: loads rrweb into the current page, starts
/// its recorder and a new recording folder.
pub(crate) async fn start(running: &mut Running) -> Result<String, BrowserError> {
    let page = running.page()?.clone();
    let config = running.recording_config.clone();
    if running.recording.is_some() {
        // The page may have changed without us noticing: make sure its
        // recorder runs.
        if let Err(failure) = recording::load(&page, &config.source, config.load_timeout).await {
            return Err(BrowserError::Recording(
                failure.message(&config.source, config.load_timeout),
            ));
        }
        recording::start_in_page(&page).await.map_err(starting)?;
        return Ok("Already recording".into());
    }
    if let Err(failure) = recording::load(&page, &config.source, config.load_timeout).await {
        tracing::info!(source = %config.source.describe(), ?failure, "recording could not start");
        return Err(BrowserError::Recording(
            failure.message(&config.source, config.load_timeout),
        ));
    }
    let rec = Recording::create(&config.output_root, config.max_buffer_bytes)
        .await
        .map_err(|e| {
            BrowserError::Recording(format!(
                "Error: Unable to start recording: cannot create a folder under {}: {e}",
                config.output_root.display()
            ))
        })?;
    // Events a previous recording left in the page are not this one's.
    let _ = recording::take_events(&page, true).await;
    let status = recording::start_in_page(&page).await.map_err(starting)?;
    if status == Started::AlreadyRecording {
        tracing::debug!("a recorder was running in the page already");
    }
    running.recording = Some(rec);
    tracing::info!("browser recording started");
    Ok("Recording started".into())
}

/// A failure while starting the recorder, as the text the agent gets.
fn starting(e: BrowserError) -> BrowserError {
    match e {
        BrowserError::Recording(m) => BrowserError::Recording(m),
        other => BrowserError::Recording(format!("Error starting recording: {other}")),
    }
}

/// `browser_stop_recording`: ends the recorder, writes what is left and
/// answers with the reference's summary.
pub(crate) async fn stop(running: &mut Running) -> Result<String, BrowserError> {
    let Some(mut rec) = running.recording.take() else {
        return Err(BrowserError::Recording(
            "Error: Not recording. Call browser_start_recording first.".into(),
        ));
    };
    if let Some(flusher) = running.flusher.take() {
        flusher.abort();
    }
    if let Ok(page) = running.page() {
        match tokio::time::timeout(TAKE_TIMEOUT, recording::take_events(page, true)).await {
            Ok(Ok((_, events, bytes))) => {
                rec.add(events, bytes);
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "last recording events not taken"),
            Err(_) => tracing::debug!("taking the last recording events timed out"),
        }
    }
    rec.save().await.map_err(|e| {
        BrowserError::Recording(format!(
            "Error stopping recording: cannot write to {}: {e}",
            rec.dir().display()
        ))
    })?;
    let summary = rec.summary();
    tracing::info!(%summary, "browser recording stopped");
    Ok(summary)
}

/// Takes the current page's events into the recording, writing them when
/// the buffer grew over its limit (or `save` asks for it); with `restart`,
/// a page whose recorder is gone (it navigated) gets a new one. Failures
/// are logged, never returned: recording must not break browsing.
pub(crate) async fn collect(running: &mut Running, save: bool, restart: bool) {
    if running.recording.is_none() {
        return;
    }
    let Ok(page) = running.page().cloned() else {
        return;
    };
    let mut gone = false;
    match tokio::time::timeout(TAKE_TIMEOUT, recording::take_events(&page, false)).await {
        Ok(Ok((active, events, bytes))) => {
            gone = !active;
            if let Some(rec) = running.recording.as_mut()
                && (rec.add(events, bytes) || save)
            {
                rec.save_logged().await;
            }
        }
        Ok(Err(e)) => tracing::debug!(error = %e, "recording events not taken"),
        Err(_) => tracing::debug!("taking recording events timed out"),
    }
    if save && let Some(rec) = running.recording.as_mut() {
        rec.save_logged().await;
    }
    if restart && gone {
        restart_on_page(running).await;
    }
}

/// Starts the recorder on the current page after it changed.
pub(crate) async fn restart_on_page(running: &mut Running) {
    if running.recording.is_none() {
        return;
    }
    let Ok(page) = running.page().cloned() else {
        return;
    };
    let config = &running.recording_config;
    if let Err(failure) = recording::load(&page, &config.source, config.load_timeout).await {
        tracing::debug!(?failure, "recording not restarted on the new page");
        return;
    }
    match recording::start_in_page(&page).await {
        Ok(status) => tracing::debug!(?status, "recording restarted on the new page"),
        Err(e) => tracing::debug!(error = %e, "recording not restarted on the new page"),
    }
}
