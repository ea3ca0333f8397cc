use super::*;
use axum::Router;
use axum::routing::get;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

/// A work runtime whose single thread is named `work`.
fn work_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("work")
        .enable_all()
        .build()
        .expect("runtime")
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

fn router() -> Router {
    Router::new()
        .route("/health", get(|| async { thread_name() }))
        .route("/api/x", get(|| async { thread_name() }))
}

async fn body_text(answer: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(answer.into_body(), 1 << 16)
        .await
        .expect("body");
    String::from_utf8_lossy(&bytes).into_owned()
}

fn get_request(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

#[test]
fn probes_stay_on_the_front_and_the_rest_runs_on_the_work_runtime() {
    let work = work_runtime();
    let front = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let service = OffloadService::new(router(), work.handle().clone());
    // The work runtime's only thread is held busy, as under load.
    let (release, held) = std::sync::mpsc::channel::<()>();
    work.spawn(async move {
        let _ = held.recv();
    });
    front.block_on(async {
        let probe = service.clone().oneshot(get_request("/health")).await;
        let probe = probe.expect("infallible");
        assert_eq!(probe.status(), 200);
        assert_ne!(
            body_text(probe).await,
            "work",
            "the probe waited for the work runtime"
        );

        let pending = tokio::spawn(service.clone().oneshot(get_request("/api/x")));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!pending.is_finished(), "ran without the work runtime");
        release.send(()).expect("release");
        let answer = pending.await.expect("join").expect("infallible");
        assert_eq!(body_text(answer).await, "work");
    });
}

#[test]
fn a_post_to_a_probe_path_is_not_a_probe() {
    let work = work_runtime();
    let front = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let app = Router::new().route("/health", axum::routing::post(|| async { thread_name() }));
    let service = OffloadService::new(app, work.handle().clone());
    front.block_on(async {
        let request = Request::post("/health")
            .body(Body::empty())
            .expect("request");
        let answer = service.oneshot(request).await.expect("infallible");
        assert_eq!(body_text(answer).await, "work");
    });
}

#[test]
fn a_dropped_request_is_cancelled_on_the_work_runtime() {
    let work = work_runtime();
    let front = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cancelled = Arc::new(AtomicBool::new(false));
    let flag = cancelled.clone();
    let app = Router::new().route(
        "/api/slow",
        get(move || {
            let flag = flag.clone();
            async move {
                /// Records that the handler was dropped before it finished.
                struct Guard(Arc<AtomicBool>);
                impl Drop for Guard {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let guard = Guard(flag);
                tokio::time::sleep(Duration::from_secs(30)).await;
                std::mem::forget(guard);
                "done"
            }
        }),
    );
    let service = OffloadService::new(app, work.handle().clone());
    front.block_on(async {
        let call = service.oneshot(get_request("/api/slow"));
        let timed_out = tokio::time::timeout(Duration::from_millis(100), call).await;
        assert!(timed_out.is_err());
        for _ in 0..100 {
            if cancelled.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the request kept running after its connection dropped it");
    });
}
