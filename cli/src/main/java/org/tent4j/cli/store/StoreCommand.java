package org.tent4j.cli.store;

import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code tent4j store}: the Mooncake-style KV store's master, node, scrub, bench and failover bench. */
@Command(name = "store", mixinStandardHelpOptions = true,
        description = "The KV store: its metadata master, a node that contributes memory (and disk), a scrub of a node's "
                + "disk, its bench and its failover bench.",
        subcommands = {MasterCommand.class, NodeCommand.class, ScrubCommand.class, StoreBench.class, FailoverBench.class})
public final class StoreCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }
}
