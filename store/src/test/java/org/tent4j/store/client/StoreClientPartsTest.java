package org.tent4j.store.client;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.members;

import java.util.HashSet;
import java.util.Set;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store client's parts (docs/ARCHITECTURE.md, "Store client parts"): {@link StoreClient} is the facade, and no
 * part, session or byte mover calls back into it; they reach replicas through {@link ReplicaAccess}. The public API of
 * the package shows no generated protobuf type, and every session is {@link AutoCloseable}.
 */
class StoreClientPartsTest {
    private static final String CLIENT = "org.tent4j.store.client";
    private static final String PROTO = "org.tent4j.store.proto";
    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages(CLIENT);
    }

    /** The facade and its nested classes (its builder). */
    private static final DescribedPredicate<JavaClass> FACADE = DescribedPredicate.describe("the StoreClient facade",
            c -> c.getName().equals(StoreClient.class.getName()) || c.getName().startsWith(StoreClient.class.getName() + "$"));

    @Test
    void noPartCallsBackIntoTheFacade() {
        noClasses().that().resideInAPackage(CLIENT).and(DescribedPredicate.not(FACADE))
                .should().dependOnClassesThat(FACADE)
                .because("parts, sessions and Transfers reach replicas through ReplicaAccess, never through the facade")
                .check(classes);
    }

    @Test
    void bytesMoveThroughReplicaAccess() {
        classes().that().haveSimpleName("Transfers").or().haveSimpleName("PutSession").or().haveSimpleName("GetSession")
                .should().dependOnClassesThat().haveSimpleName("ReplicaAccess")
                .check(classes);
    }

    @Test
    void sessionsAreAutoCloseable() {
        classes().that().haveSimpleNameEndingWith("Session").and().arePublic()
                .should().beAssignableTo(AutoCloseable.class)
                .check(classes);
    }

    /** A public or protected member of a public class of the package whose signature names a generated protobuf type. */
    private static final ArchCondition<JavaMember> NO_PROTO = new ArchCondition<>("name no generated protobuf type ("
            + PROTO + ") in its signature") {
        @Override
        public void check(JavaMember member, ConditionEvents events) {
            Set<JavaClass> types = new HashSet<>();
            if (member instanceof JavaCodeUnit u) {
                u.getParameterTypes().forEach(t -> types.addAll(t.getAllInvolvedRawTypes()));
                types.addAll(u.getReturnType().getAllInvolvedRawTypes());
            } else if (member instanceof JavaField f) {
                types.addAll(f.getType().getAllInvolvedRawTypes());
            }
            for (JavaClass t : types) {
                if (t.getBaseComponentType().getPackageName().equals(PROTO)) {
                    events.add(SimpleConditionEvent.violated(member, member.getFullName() + " exposes " + t.getName()));
                }
            }
        }
    };

    private static final DescribedPredicate<JavaMember> VISIBLE = DescribedPredicate.describe("public or protected",
            m -> m.getModifiers().contains(JavaModifier.PUBLIC) || m.getModifiers().contains(JavaModifier.PROTECTED));

    @Test
    void publicApiShowsNoGeneratedProtobufType() {
        members().that().areDeclaredInClassesThat().resideInAPackage(CLIENT).and().areDeclaredInClassesThat().arePublic()
                .and(VISIBLE).should(NO_PROTO)
                .because("the generated wire types are the master protocol's, never the client's API")
                .check(classes);
    }
}
