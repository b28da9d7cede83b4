fn main() {
    println!("Hello from the ServerFS demo workdir.");
}
