use rustshelf::label::{mark, sheet, spine};
use rustshelf::shelf::Shelf;

#[test]
fn add_and_lend() {
    let mut shelf = Shelf::new();
    assert!(shelf.is_bare());
    assert_eq!(shelf.add("Dune", "Frank Herbert"), 1);
    assert_eq!(shelf.add("", "Nobody"), 1);
    assert_eq!(shelf.add("Emma", "Jane Austen"), 2);
    assert!(!shelf.is_bare());
    assert_eq!(shelf.lend("Dune", "ann"), Ok(()));
    assert_eq!(shelf.lend("Dune", "bob"), Err("Dune is out".to_string()));
    assert_eq!(shelf.lend("Emma", ""), Err("nobody".to_string()));
    assert_eq!(shelf.lend("Ulysses", "ann"), Err("no such book".to_string()));
    assert_eq!(shelf.on_loan(), vec!["Dune (ann)".to_string()]);
    assert_eq!(shelf.by("Jane Austen").len(), 1);
}

#[test]
fn labels() {
    let mut shelf = Shelf::new();
    shelf.add("The Left Hand of Darkness", "Ursula K. Le Guin");
    shelf.add("Beloved", "Toni Morrison");
    let books: Vec<_> = shelf.by("Toni Morrison").into_iter().cloned().collect();
    assert_eq!(spine(&books[0]), "MORRISON Beloved");
    assert_eq!(sheet(&[]), "empty");
    assert_eq!(sheet(&books), "MORRISON Beloved");
    assert_eq!(mark(4), "A-5");
}
