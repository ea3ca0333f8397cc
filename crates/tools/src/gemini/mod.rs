//! The Gemini-style file tools: `read_file`, `write_file`, `edit` and
//! `list_directory`, an alternative to `file_editor` used by the Gemini
//! preset. Paths may be absolute or relative to the working directory; every
//! path must resolve inside the workspace (symbolic links included).

mod edit;
mod list_directory;
mod paths;
mod read_file;
mod write_file;

pub use edit::{EDIT_NAME, EditAction, EditObservation, EditTool};
pub use list_directory::{
    FileEntry, LIST_DIRECTORY_NAME, ListDirectoryAction, ListDirectoryObservation,
    ListDirectoryTool, MAX_ENTRIES,
};
pub use read_file::{
    MAX_LINES_PER_READ, READ_FILE_NAME, ReadFileAction, ReadFileObservation, ReadFileTool,
};
pub use write_file::{WRITE_FILE_NAME, WriteFileAction, WriteFileObservation, WriteFileTool};
