package org.tent4j.api;

/** Scheduling class of a request; numbered as TENT's PRIO_HIGH=0, PRIO_MEDIUM=1, PRIO_LOW=2. */
public enum Priority {
    /** Latency-sensitive work, scheduled first (the default). */
    HIGH,
    /** Scheduled after HIGH. */
    MEDIUM,
    /** Background work, scheduled last. */
    LOW

}
