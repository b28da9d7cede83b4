mod config_errors;
mod hostile_paths;
mod logging;
mod paging;
mod race;
mod read_tools;
mod resource;
mod surface;
