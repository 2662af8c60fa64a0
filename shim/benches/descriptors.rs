fn main() { println!("placeholder"); }
