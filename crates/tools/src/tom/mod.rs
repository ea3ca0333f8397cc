//! The Theory-of-Mind tools: `tom_consult` (`TomConsultTool`) asks a model
//! that keeps a profile of the user what a vague request most likely means
//! and how this user likes work done; `sleeptime_compute`
//! (`SleeptimeComputeTool`) reads the user's stored conversations and
//! updates that profile. Both keep their files where the reference's do,
//! under the user persistence directory (`$OH_PERSISTENCE_DIR`, else
//! `~/.openhands`): `usermodeling/overall_user_model.json`,
//! `usermodeling/processed_sessions_timestamps.json` and
//! `usermodeling/cleaned_sessions/<id>.json`, reading conversations from
//! `conversations/<id>/events/`.
//!
//! The reference delegates to the `tom-swe` package; here the modelling is
//! our own: one model call per consultation (profile, related excerpts of
//! earlier sessions found by BM25 when `enable_rag` is set, the current
//! conversation) and one per indexing run.
//!
//! Map: `params` (the tool spec's parameters), `store` (the files),
//! `retrieval` (BM25 over stored sessions), `engine` (the model calls),
//! `consult` and `sleeptime` (the two tools).

pub mod consult;
pub mod engine;
pub mod params;
pub mod retrieval;
pub mod sleeptime;
pub mod store;

pub use consult::{ConsultTomAction, ConsultTomObservation, TOM_CONSULT_NAME, TomConsultTool};
pub use sleeptime::{
    SLEEPTIME_COMPUTE_NAME, SleeptimeComputeAction, SleeptimeComputeObservation,
    SleeptimeComputeTool,
};
