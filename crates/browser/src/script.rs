//! Running JavaScript in a page and reading its answer as JSON.

use crate::error::BrowserError;
use chromiumoxide::Page;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use serde::de::DeserializeOwned;

/// Evaluates `expr` (awaited when it is a promise) and parses its JSON value.
pub(crate) async fn eval<T: DeserializeOwned>(page: &Page, expr: &str) -> Result<T, BrowserError> {
    let text = eval_json_text(page, expr).await?;
    serde_json::from_str(&text)
        .map_err(|e| BrowserError::Cdp(format!("unexpected answer from the page: {e}")))
}

/// Evaluates `expr` (awaited when it is a promise) and returns its value
/// serialized as JSON text.
pub(crate) async fn eval_json_text(page: &Page, expr: &str) -> Result<String, BrowserError> {
    let wrapped = format!(
        "(async () => {{ const v = await ({expr}); return JSON.stringify(v === undefined ? null : v); }})()"
    );
    page.evaluate(wrapped)
        .await?
        .into_value()
        .map_err(|e| BrowserError::Cdp(format!("unexpected answer from the page: {e}")))
}

/// Runs a whole classic script (not an expression) in the page's main
/// world, as a `<script>` element would, without going through the
/// network or the page's content security policy.
pub(crate) async fn run_script(page: &Page, source: &str) -> Result<(), BrowserError> {
    let params = EvaluateParams::builder()
        .expression(source)
        .return_by_value(false)
        .build()
        .map_err(BrowserError::Cdp)?;
    let answer = page.execute(params).await?;
    if let Some(ex) = &answer.result.exception_details {
        let why = ex
            .exception
            .as_ref()
            .and_then(|e| e.description.clone())
            .unwrap_or_else(|| ex.text.clone());
        return Err(BrowserError::Cdp(format!("the script failed: {why}")));
    }
    Ok(())
}
