mod confinement;
mod list;
mod read;
mod stat;
mod property;
mod mutate;
