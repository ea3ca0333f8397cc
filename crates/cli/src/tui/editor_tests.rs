use super::*;

#[test]
fn typing_newlines_and_deleting() {
    let mut e = Editor::default();
    e.insert_str("hello");
    e.newline();
    e.insert_str("wörld");
    assert_eq!(e.text(), "hello\nwörld");
    assert_eq!(e.cursor(), (1, 5));
    e.backspace();
    assert_eq!(e.text(), "hello\nwörl");
    e.home();
    e.backspace();
    assert_eq!(e.text(), "hellowörl");
    assert_eq!(e.cursor(), (0, 5));
    e.delete();
    assert_eq!(e.text(), "helloörl");
    e.end();
    e.delete_word_back();
    assert_eq!(e.text(), "");
    assert!(e.is_empty());
}

#[test]
fn paste_normalizes_line_ends_and_moves() {
    let mut e = Editor::default();
    e.insert_str("a\r\nbb\rccc\tx");
    assert_eq!(e.lines(), &["a", "bb", "ccc    x"]);
    assert!(e.up());
    assert_eq!(e.cursor(), (1, 2));
    assert!(e.up());
    assert_eq!(e.cursor(), (0, 1));
    assert!(!e.up());
    e.end();
    e.right();
    assert_eq!(e.cursor(), (1, 0));
    e.left();
    assert_eq!(e.cursor(), (0, 1));
    assert!(e.down() && e.down() && !e.down());
    assert_eq!(e.cursor(), (2, 1));
    e.kill_to_start();
    assert_eq!(e.lines()[2], "cc    x");
    e.end();
    e.kill_to_start();
    assert_eq!(e.lines()[2], "");
    e.set_text("one two  three");
    e.delete_word_back();
    assert_eq!(e.text(), "one two  ");
    e.home();
    e.kill_to_end();
    assert_eq!(e.text(), "");
}

#[test]
fn layout_wraps_and_places_the_cursor() {
    let mut e = Editor::default();
    e.insert_str("abcdefgh");
    let (rows, cur) = e.layout(4);
    assert_eq!(rows, vec!["abcd", "efgh", ""]);
    assert_eq!(cur, (2, 0));
    e.left();
    let (rows, cur) = e.layout(4);
    assert_eq!(rows, vec!["abcd", "efgh"]);
    assert_eq!(cur, (1, 3));
    e.set_text("ab\n日本語");
    let (rows, cur) = e.layout(4);
    assert_eq!(rows, vec!["ab", "日本", "語"]);
    assert_eq!(cur, (2, 2));
}
