//! A tiny website on loopback for the browser tests: a home page with
//! links (one opening a new tab), a form, the form's result page (echoing what was typed), a page
//! with a button that changes the page by script, and a page that never
//! answers; extra scripts (such as rrweb) can be served beside them.

use axum::Router;
use axum::extract::Query;
use axum::response::Html;
use axum::routing::get;
use std::collections::HashMap;
use std::net::SocketAddr;
use tokio::task::JoinHandle;

/// The running site; stops when dropped.
#[derive(Debug)]
pub struct TestSite {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

const HOME: &str = r#"<!doctype html><html><head><title>Test home</title></head><body>
<main><h1>Welcome to the test site</h1>
<p>This page is served by the <strong>browser tests</strong>.</p>
<ul><li>first point</li><li>second point</li></ul>
<p><a href="/form">Open the greeting form</a></p>
<p><a href="/button">Open the button page</a></p>
<p><a href="/button" target="_blank">Button page in a new tab</a></p>
<div style="display:none">hidden text must not show</div>
</main></body></html>"#;

const FORM: &str = r#"<!doctype html><html><head><title>Greeting form</title></head><body>
<h1>Who are you?</h1>
<form action="/result" method="get">
<input name="name" placeholder="Your name">
<button type="submit">Send greeting</button>
</form></body></html>"#;

const BUTTON: &str = r#"<!doctype html><html><head><title>Button page</title></head><body>
<h1>Counter</h1><p id="count">Clicked 0 times</p>
<button onclick="window.n=(window.n||0)+1;document.getElementById('count').textContent='Clicked '+window.n+' times'">Add one</button>
</body></html>"#;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

async fn result(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let name = q.get("name").map(String::as_str).unwrap_or("nobody");
    Html(format!(
        "<!doctype html><html><head><title>Greeting</title></head><body><h1>Hello, {}!</h1><p>Greeting sent.</p></body></html>",
        escape(name)
    ))
}

impl TestSite {
    /// Serves the site on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with_scripts(Vec::new()).await
    }

    /// Serves the site plus each `(path, JavaScript)` pair as a script
    /// (`application/javascript`) at its path.
    pub async fn start_with_scripts(scripts: Vec<(String, String)>) -> std::io::Result<Self> {
        let mut app = Router::new()
            .route("/", get(|| async { Html(HOME) }))
            .route("/form", get(|| async { Html(FORM) }))
            .route("/button", get(|| async { Html(BUTTON) }))
            .route("/result", get(result))
            .route(
                "/never",
                get(|| async {
                    std::future::pending::<()>().await;
                    Html("")
                }),
            );
        for (path, body) in scripts {
            app = app.route(
                &path,
                get(move || {
                    let body = body.clone();
                    async move {
                        (
                            [(axum::http::header::CONTENT_TYPE, "application/javascript")],
                            body,
                        )
                    }
                }),
            );
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "test site stopped");
            }
        });
        Ok(Self { addr, task })
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}
