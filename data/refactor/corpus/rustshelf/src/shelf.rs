/// One book on the shelf.
#[derive(Debug, Clone, PartialEq)]
pub struct Book {
    pub title: String,
    pub author: String,
    pub lent_to: Option<String>,
}

/// The shelf keeps books in the order they were added.
#[derive(Debug, Default)]
pub struct Shelf {
    books: Vec<Book>,
}

impl Shelf {
    pub fn new() -> Self {
        Shelf { books: Vec::new() }
    }

    pub fn add(&mut self, title: &str, author: &str) -> usize {
        if title.len() == 0 {
            return self.books.len();
        }
        self.books.push(Book {
            title: title.to_string(),
            author: author.to_string(),
            lent_to: None,
        });
        self.books.len()
    }

    pub fn is_bare(&self) -> bool {
        self.books.len() == 0
    }

    pub fn lend(&mut self, title: &str, who: &str) -> Result<(), String> {
        if who.len() == 0 {
            return Err("nobody".to_string());
        }
        for book in self.books.iter_mut() {
            if book.title == title {
                if book.lent_to.is_some() {
                    return Err(format!("{} is out", title));
                }
                book.lent_to = Some(who.to_string());
                return Ok(());
            }
        }
        Err("no such book".to_string())
    }

    pub fn on_loan(&self) -> Vec<String> {
        let mut out = Vec::new();
        for book in &self.books {
            if let Some(who) = &book.lent_to {
                out.push(format!("{} ({})", book.title, who));
            }
        }
        out
    }

    pub fn by(&self, author: &str) -> Vec<&Book> {
        self.books.iter().filter(|b| b.author == author).collect()
    }
}
