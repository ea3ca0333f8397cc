//! Iterative refinement with two agents: a refactoring agent converts a
//! COBOL program to Java, a critique agent scores the result in
//! `critique.md`, and while the score is below the threshold the refactoring
//! agent gets another turn pointing at the critique.
//!
//! Both agents keep their conversation across rounds, so each sees its own
//! earlier work. Offline each answers from its own script.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use std::path::Path;

const QUALITY_THRESHOLD: u32 = 90;
const MAX_ITERATIONS: u32 = 3;

const COBOL: &str = "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. HELLO.\n       \
                     PROCEDURE DIVISION.\n           DISPLAY 'HELLO, WORLD'.\n           STOP RUN.\n";

/// The score on the critique's `Score: N` line.
fn critique_score(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Score:"))
        .and_then(|s| s.trim().parse().ok())
}

fn agent(script: &str) -> Result<Agent, Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(script)?;
    Ok(AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::current_dir()?;
    std::fs::create_dir_all(dir.join("cobol"))?;
    std::fs::write(dir.join("cobol/HELLO.cbl"), COBOL)?;
    let critique_file = dir.join("critique.md");

    let refactorer = ConversationBuilder::new(
        agent(include_str!("scripts/31_refactor.json"))?,
        dir.clone(),
    )
    .build_local()?;
    let critic = ConversationBuilder::new(
        agent(include_str!("scripts/31_critique.json"))?,
        dir.clone(),
    )
    .build_local()?;

    let mut task = "Convert cobol/HELLO.cbl into idiomatic Java under java/.".to_string();
    for iteration in 1..=MAX_ITERATIONS {
        refactorer.send_message(task.as_str())?;
        refactorer.run().await?;

        critic.send_message(format!(
            "Review the Java conversion of cobol/HELLO.cbl in java/ for correctness, code \
             quality, completeness and best practices (25 points each). Write critique.md \
             with a first line `Score: N` (0-100) followed by concrete issues. Attempt {iteration}."
        ))?;
        critic.run().await?;

        let score = critique_score(&critique_file).ok_or("critique.md has no `Score:` line")?;
        println!("iteration {iteration}: score {score}");
        if score >= QUALITY_THRESHOLD {
            println!("reached {score} >= {QUALITY_THRESHOLD} after {iteration} iteration(s)");
            return Ok(());
        }
        task = format!(
            "A review scored your conversion {score}/100. Read {} and address every issue.",
            critique_file.display()
        );
    }
    println!("stopped after {MAX_ITERATIONS} iterations below {QUALITY_THRESHOLD}");
    Ok(())
}
