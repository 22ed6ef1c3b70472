// Phases 2–4 of a rollout round: donor/heir pairs. A pair holds only while both
// annotations agree and the heir runs the current target; otherwise it is
// dissolved (a changed image re-targets: the old heir is outdated now). Pairs
// whose drain succeeded are finished, and each mint is paired with an outdated
// node of its group (anchor step 9).
import { type Action, deletionKey } from '../actions.ts';
import { inheritedLabels, type ObservedNode, onTarget } from '../classify.ts';
import { agreedHeir, byName, freeToPair, heirGaveUp, nodeOf, type RolloutView, surplusIn } from '../view.ts';

/** Phase 2a: pairs that no longer hold are taken apart; a given-up or off-target heir is surplus. */
export function dissolvePairs(view: RolloutView): Action[] {
  return view.c.donors.flatMap((name) => {
    const donor = nodeOf(view, name);
    const heir = agreedHeir(donor, view.heirs, view.nodes);
    if (heir) return heirGaveUp(donor, heir, view.state) ? giveUpHeir(donor, heir) : [];
    return dissolveLostPair(view, donor);
  });
}

/** Removed as surplus; the donor is free again and gets a new heir. */
function giveUpHeir(donor: ObservedNode, heir: ObservedNode): Action[] {
  const out: Action[] = [
    {
      type: 'markObsolete',
      cause: 'heirNotReady',
      node: heir.name,
      donor: donor.name,
      reason: `not Ready in time to replace ${donor.name}`,
    },
  ];
  if (donor.drain)
    out.push({
      type: 'cancelDrain',
      cause: 'heirGaveUp',
      node: donor.name,
      reason: `heir ${heir.name} given up`,
    });
  return out;
}

function dissolveLostPair(view: RolloutView, donor: ObservedNode): Action[] {
  const out: Action[] = [];
  // WHY: deleting a donor without an up-to-date heir would shrink its group.
  if (donor.drain) {
    out.push({
      type: 'cancelDrain',
      cause: 'heirLost',
      node: donor.name,
      reason: 'its heir is gone or not on the target',
    });
  }
  // An heir made for an earlier target: the donor stays and is replaced afresh.
  const heir = view.nodes.get(donor.annotations!.heir!);
  const h = heir?.annotations;
  if (heir && h?.donor === donor.name && !h.obsolete && !onTarget(heir, view.state.target)) {
    out.push({
      type: 'markObsolete',
      cause: 'heirOffTarget',
      node: heir.name,
      reason: `made for an earlier target than ${view.state.target.image}`,
    });
  }
  return out;
}

/** Phase 2b: pairing annotations left on a node whose pair is gone (surplus nodes keep theirs). */
export function clearStalePairings(view: RolloutView, planned: readonly Action[]): Action[] {
  const surplus = surplusIn(planned);
  return [...view.state.nodes]
    .sort(byName)
    .filter((n) => {
      const a = n.annotations;
      return (a?.donor || a?.heir) && !view.paired.has(n.name) && !a.obsolete && !surplus.has(n.name);
    })
    .map((n) => ({
      type: 'clearPairing',
      cause: 'partnerGone',
      node: n.name,
      reason: 'partner gone or not on the target',
    }));
}

/**
 * Phase 3: finish replacements whose drain succeeded (also while paused: they are in
 * flight). A failed drain is recorded and retried later, never left to wedge the rollout.
 */
export function finishReplacements(view: RolloutView): Action[] {
  return view.pairs.flatMap(({ donor, heir }): Action[] => {
    const out: Action[] = [];
    if (donor.drain === 'Failed') {
      out.push({
        type: 'drainFailed',
        cause: 'drainFailed',
        node: donor.name,
        reason: `drain for heir ${heir.name} failed`,
      });
    }
    if (donor.drain !== 'Succeeded') return out;
    out.push(
      {
        type: 'deleteNode',
        cause: 'replaced',
        node: donor.name,
        providerID: donor.providerID!,
        reason: `replaced by ${heir.name}`,
      },
      {
        type: 'clearPairing',
        cause: 'donorDeleted',
        node: heir.name,
        reason: `donor ${donor.name} deleted`,
        // WHY: a donor left standing without its pair would be replaced a second time.
        requires: deletionKey(donor.providerID!),
      },
    );
    return out;
  });
}

/** Phase 4: each mint replaces a free outdated node of its group, or is surplus. Paused still pairs. */
export function pairMints(view: RolloutView, planned: readonly Action[]): Action[] {
  const free = freeToPair(view, planned);
  const mintPending = new Map(
    view.joins.flatMap((j) => (j.outcome === 'mint' && j.node ? [[j.node.name, j.pending]] : [])),
  );
  const taken = new Set<string>();
  return view.c.mints.flatMap((m): Action[] => {
    const mint = nodeOf(view, m);
    const donor = free.find((d) => d.groupId === mint.groupId && !taken.has(d.name));
    if (!donor) {
      return [
        {
          type: 'markObsolete',
          cause: 'noDonor',
          node: m,
          reason: `no outdated node in group ${mint.groupId}`,
        },
      ];
    }
    // A mint is a replacement in flight, to be finished.
    taken.add(donor.name);
    const out: Action[] = [
      {
        type: 'pair',
        cause: 'mintJoined',
        donor: donor.name,
        heir: m,
        labels: inheritedLabels(donor.labels),
        reason: `${m} replaces ${donor.name}`,
      },
    ];
    const p = mintPending.get(m);
    if (p) out.push({ type: 'deletePending', cause: 'paired', name: p.name, reason: `node ${m} paired` });
    return out;
  });
}
