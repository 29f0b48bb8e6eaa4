package org.tent4j.store.master;

/**
 * One entry of the master's command stream: its place in the order ({@code index}, from 1, no gaps), the time it is
 * applied at ({@code now}, nanos, never less than the entry before's), and the command. Applying the entries of a
 * stream in index order to an empty {@link MasterState} gives the state the master had after the last one.
 */
public record LogEntry(long index, long now, Command<?> command) {
}
