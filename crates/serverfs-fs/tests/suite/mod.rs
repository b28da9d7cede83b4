mod confinement;
mod find_search;
mod list;
mod mutate;
mod property;
mod read;
mod stat;
