use crate::shelf::Book;

/// A label for the spine: the author's last name, upper-cased, and a short title.
pub fn spine(book: &Book) -> String {
    let last = book.author.split_whitespace().last().unwrap_or("");
    let short: String = book.title.chars().take(12).collect();
    if last.len() == 0 {
        return short;
    }
    let upper = last.to_uppercase();
    format!("{} {}", upper, short)
}

/// Labels of several books, one a line.
pub fn sheet(books: &[Book]) -> String {
    if books.len() == 0 {
        return "empty".to_string();
    }
    let mut lines = Vec::new();
    for book in books {
        let line = spine(book);
        lines.push(format!("{}", line));
    }
    lines.join("\n")
}

/// A shelf mark: "A-" and the count.
pub fn mark(count: usize) -> String {
    let number = count + 1;
    let text = format!("{}", number);
    "A-".to_string() + &text
}
