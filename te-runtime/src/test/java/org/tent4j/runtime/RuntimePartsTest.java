package org.tent4j.runtime;






import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import java.util.Set;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;


/**
 * Which part of the runtime may call which (docs/ARCHITECTURE.md, data flow): data flows one way, from the facade
 * through the launcher to the slice router, its path groups and the transports; nothing calls back up. Each part is a
 * package (launch, select, schedule, memory, plugins); the package rules hold every class added to a part, the named
 * rules single classes. Classes are named, not referenced, so each rule also reads (and fails) on code that predates
 * the classes it names.
 */
class RuntimePartsTest {
    private static final String RUNTIME = "org.tent4j.runtime";
    /** The facade, and the factory that creates it. */
    private static final String[] FACADE = {"TransferEngineImpl", "DefaultEngineFactory"};
    /** Starting tasks: resolve, select, cut; batches and prepared transfers; staging. */
    private static final String[] LAUNCH = {"TaskLauncher", "BatchImpl", "PreparedTransferImpl", "HostStaging"};
    /** Where a slice goes once cut: the router, its path groups and their paths, the slices, and the tasks they end. */
    private static final String[] SCHEDULE = {"SliceRouter", "PathGroup", "PathChoice", "PathQueues", "PathState", "SliceRing",
            "RuntimeSlice", "SlicePool", "Task", "PathLimits"};
    /** The open peers ({@code org.tent4j.runtime.peers}). */
    private static final String[] PEERS = {"SegmentTable", "RemoteSegment"};
    /** The packages the runtime's own parts live in; the older subpackages (config, control, metadata, metrics, peers) are libraries to them. */
    private static final Set<String> PARTS = Set.of(RUNTIME, RUNTIME + ".schedule", RUNTIME + ".launch",
            RUNTIME + ".select", RUNTIME + ".plugins", RUNTIME + ".memory");
    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages(RUNTIME);
    }

    /** The runtime's classes (or arrays of them) of these simple names, in any of its packages, with their nested classes. */
    private static DescribedPredicate<JavaClass> named(String... simpleNames) {
        Set<String> names = Set.of(simpleNames);
        return DescribedPredicate.describe(String.join(", ", simpleNames), c -> inRuntimeOrBelow(c)
                && names.contains(binaryName(c).split("\\$")[0]));
    }

    /** Exactly these classes of the runtime (binary names: {@code PathGroup$Router}), not their nested ones. */
    private static DescribedPredicate<JavaClass> exactly(String... binaryNames) {
        Set<String> names = Set.of(binaryNames);
        return DescribedPredicate.describe(String.join(", ", binaryNames), c -> inRuntimeOrBelow(c) && names.contains(binaryName(c)));
    }

    /** Anything outside the runtime's own packages ({@link #PARTS}) except {@code excluded}, or one of {@code allowed} in it. */
    private static DescribedPredicate<JavaClass> outsideTheRuntimeOr(Set<String> excluded, String... allowed) {
        DescribedPredicate<JavaClass> inside = exactly(allowed);
        return DescribedPredicate.describe("outside " + RUNTIME + " (but not " + excluded + ") or " + String.join(", ", allowed),
                c -> (!inRuntime(c) && !excluded.contains(c.getBaseComponentType().getName())) || inside.test(c));
    }

    private static boolean inRuntime(JavaClass c) {
        return PARTS.contains(c.getBaseComponentType().getPackageName());
    }

    private static boolean inRuntimeOrBelow(JavaClass c) {
        String p = c.getBaseComponentType().getPackageName();
        return p.equals(RUNTIME) || p.startsWith(RUNTIME + ".");
    }

    /** The name within its package: {@code PathGroup$Router}. */
    private static String binaryName(JavaClass c) {
        JavaClass base = c.getBaseComponentType();
        return base.getName().substring(base.getPackageName().length() + 1);
    }

    @Test
    void noPartCallsTheFacade() {
        noClasses().that().resideInAPackage(RUNTIME + "..").and(DescribedPredicate.not(named(FACADE)))
                .should().dependOnClassesThat(named("TransferEngineImpl"))
                .because("TransferEngineImpl only wires the parts and delegates to them; a part that calls it back makes"
                        + " the flow circular (ARCHITECTURE.md: no part calls back into the facade)")
                .allowEmptyShould(false).check(classes);
    }

    /** The packages, not only the classes named above: a class added to a part is held to its part's rules. */
    @Test
    void theSchedulePackageDependsNeitherOnTheLaunchPackageNorOnTheFacade() {
        noClasses().that().resideInAPackage(RUNTIME + ".schedule..")
                .should().dependOnClassesThat().resideInAPackage(RUNTIME + ".launch..")
                .orShould().dependOnClassesThat(named(FACADE))
                .because("the launcher hands slices to the router; what flows back up goes to Task, which the schedule"
                        + " package owns (ARCHITECTURE.md, data flow)")
                .allowEmptyShould(false).check(classes);
    }

    @Test
    void selectionDependsOnNoPartThatActsOnIt() {
        noClasses().that().resideInAPackage(RUNTIME + ".select..")
                .should().dependOnClassesThat().resideInAnyPackage(RUNTIME + ".launch..", RUNTIME + ".schedule..")
                .orShould().dependOnClassesThat(named(FACADE))
                .because("a Selection is decided from the resolved request, the policy and the transports alone; the"
                        + " launcher acts on it, and the router asks again on failover (ARCHITECTURE.md, data flow)")
                .allowEmptyShould(false).check(classes);
    }

    @Test
    void registrationsKnowNothingOfRequests() {
        noClasses().that().resideInAPackage(RUNTIME + ".memory..")
                .should().dependOnClassesThat().resideInAnyPackage(RUNTIME + ".launch..", RUNTIME + ".select..",
                        RUNTIME + ".schedule..")
                .orShould().dependOnClassesThat(named(FACADE))
                .because("what is registered and published is decided when the application registers it; requests only"
                        + " read it (ARCHITECTURE.md, data flow)")
                .allowEmptyShould(false).check(classes);
    }

    @Test
    void pluginLoadingKnowsNoOtherPart() {
        noClasses().that().resideInAPackage(RUNTIME + ".plugins..")
                .should().dependOnClassesThat().resideInAnyPackage(RUNTIME + ".launch..", RUNTIME + ".select..",
                        RUNTIME + ".schedule..", RUNTIME + ".memory..")
                .orShould().dependOnClassesThat(named(FACADE))
                .because("plugins are loaded before any other part exists, and every part reads the loaded transports")
                .allowEmptyShould(false).check(classes);
    }

    @Test
    void onlyTheLauncherKnowsHostStaging() {
        classes().that(named("HostStaging")).should().onlyHaveDependentClassesThat(named("HostStaging", "TaskLauncher"))
                .because("the launcher builds HostStaging in its constructor and hands it its own submit; built by the"
                        + " facade it would be handed the facade's submit, and wired into the launcher by a setter")
                .check(classes);
    }

    @Test
    void scheduleCodeDependsNeitherOnLaunchCodeNorOnTheFacade() {
        noClasses().that(named(SCHEDULE)).should().dependOnClassesThat(named(LAUNCH).or(named(FACADE)))
                .because("slices flow from the launcher to the router and its groups; the schedule tells a task how its"
                        + " slices end (Task), never the launcher or the facade").check(classes);
    }

    @Test
    void thePeerTableHoldsNoSchedulerState() {
        noClasses().that(named(PEERS)).should().dependOnClassesThat(named(SCHEDULE).or(named(LAUNCH)).or(named(FACADE)))
                .because("a RemoteSegment is a peer record; the router owns the path groups and SegmentTable tells it of"
                        + " changes through SegmentTable.Connections").check(classes);
    }

    @Test
    void thePeersPackageNeedsOnlyTheEngineStateAndTheDirectory() {
        noClasses().that().resideInAPackage(RUNTIME + ".peers..")
                .should().dependOnClassesThat(DescribedPredicate.describe("in " + RUNTIME + " (other than EngineState)",
                        c -> inRuntime(c) && !binaryName(c).equals("EngineState")))
                .because("the open peers are a table of descriptors kept current by the metadata directory; whoever holds"
                        + " connections implements SegmentTable.Connections").check(classes);
    }

    @Test
    void aSliceTellsOnlyItsGroup() {
        classes().that(named("RuntimeSlice")).should().onlyDependOnClassesThat(outsideTheRuntimeOr(
                        Set.of("org.tent4j.spi.PeerConnection"), "RuntimeSlice", "PathGroup", "Task", "SlicePool",
                        "SlicePool$Stripe", "RegisteredBuffer", "TransportSlot"))
                .because("a completion, failure or cancel is told to the slice's PathGroup, which updates its paths and"
                        + " hands the slice up to the router; the slice neither reroutes itself nor touches the group's"
                        + " connection or paths").check(classes);
    }

    @Test
    void aPathGroupReportsUpwardOnlyThroughItsRouterInterface() {
        // the group's own parts (its path choice and its queues) are held to the same rule
        classes().that(named("PathGroup", "PathChoice", "PathQueues")).should().onlyDependOnClassesThat(outsideTheRuntimeOr(
                        Set.of(), "PathGroup", "PathGroup$Router", "PathChoice", "PathQueues", "PathState", "SliceRing",
                        "RuntimeSlice", "Task", "Policy", "PathLimits", "TransportSlot", "RemoteSegment", "RegisteredBuffer"))
                .because("a group knows neither the router that owns it nor any other group: what it cannot carry it"
                        + " hands to PathGroup.Router, and the router decides where it goes").check(classes);
    }

    @Test
    void aTaskReportsToItsOwnerNotToTheLauncher() {
        noClasses().that(named("Task")).should().dependOnClassesThat(named("TaskLauncher"))
                .because("Task.Owner completes its tasks' futures; a task reaching the launcher through its owner ties"
                        + " the task to how batches are started").check(classes);
    }
}
