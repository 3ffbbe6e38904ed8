/**
 * What one host's pre-pulled images should be (FlashBoot, docs/serverless.md "Pre-pulled images"):
 * the per-host disk budget shared max-min fairly between the accounts that want images there.
 *
 * - Each image is charged to one account: the first account (in the order given: the one whose
 *   oldest FlashBoot endpoint is oldest first) that wants it.
 * - Images held that no account wants are removed; one a container uses cannot be, and counts in
 *   the share of the account it was pulled for (off the top of the budget when that is not known).
 * - Shares (water-filling): every account that wants images gets an equal part of what is left;
 *   an account that needs less than its part (all it wants fits) takes only that, and the rest is
 *   split again between the others. An account's images a container uses are its own whatever
 *   they take (an account holding more than its part that way gets nothing more).
 * - What a share leaves unused because its account's next image does not fit it is lent to the
 *   others (the account using least first) for images that fit it; they give it back when the lender's shares
 *   let its images in (then they are over their share).
 * - Within its share an account's images are taken in its order (oldest endpoint first), each that
 *   fits; an image that does not fit is skipped (not pulled; removed if held and no container uses
 *   it) and the next is tried. An image whose size is not known yet (never pulled here) comes after
 *   its account's images of known size (so it never pushes out one the host holds), is taken if
 *   any of the share is left, and reserves all of it until its pull tells its size; an account
 *   with such an image counts as wanting as much as it may get.
 * - Removals of images over their account's share come most-over-share account first, and within
 *   an account its newest endpoint's image first (the reverse of its order).
 * Pure: no I/O; sizes and what containers use come in.
 */

/** An image the host holds because Gantry pre-pulled it. */
export interface PrepullHeld {
  image: string;
  sizeBytes: number;
  /** A container uses it: it cannot be removed now. */
  inUse: boolean;
  /** The account it was pulled for (null: not known). */
  accountId?: string | null;
}

/** What one account wants on the host, in its order (oldest endpoint first). */
export interface PrepullWant {
  accountId: string;
  images: string[];
}

export interface PrepullPlanInput {
  budgetBytes: number;
  held: readonly PrepullHeld[];
  /** Accounts in order: the one whose oldest endpoint is oldest first. */
  wanted: readonly PrepullWant[];
  /** Sizes learned from earlier pulls (an image absent: not known yet). */
  sizes: ReadonlyMap<string, number>;
}

interface PrepullPull {
  image: string;
  accountId: string;
  /** What the plan reserves for it: its size, or what was left of its account's share when not known. */
  roomBytes: number;
}

interface PrepullRemoval {
  image: string;
  /** `unwanted`: no account wants it; `over-share`: its account's share does not hold it. */
  reason: 'unwanted' | 'over-share';
  accountId: string | null;
  sizeBytes: number;
}

export interface PrepullPlan {
  /** Bytes each account may use on the host. */
  shares: Map<string, number>;
  keep: string[];
  /** Round-robin over the accounts (each one's first pull, then each one's second…). */
  pull: PrepullPull[];
  /** Unwanted first, then over-share in the order above. */
  remove: PrepullRemoval[];
}

interface Account {
  id: string;
  images: string[];
  /** What its images a container uses take. */
  pinned: number;
}

interface Fit {
  used: number;
  taken: Array<{ image: string; roomBytes: number }>;
}

export function planPrepull(input: PrepullPlanInput): PrepullPlan {
  const held = new Map(input.held.map((h) => [h.image, h]));
  const sizeOf = (image: string): number | undefined => held.get(image)?.sizeBytes ?? input.sizes.get(image);
  const owner = new Map<string, string>();
  const accounts: Account[] = [];
  for (const want of input.wanted) {
    const images: string[] = [];
    for (const image of want.images)
      if (!owner.has(image)) {
        owner.set(image, want.accountId);
        images.push(image);
      }
    const pinned = images.reduce((sum, i) => sum + (held.get(i)?.inUse ? held.get(i)!.sizeBytes : 0), 0);
    if (images.length > 0) accounts.push({ id: want.accountId, images, pinned });
  }

  const remove: PrepullRemoval[] = [];
  let fixed = 0;
  for (const h of input.held)
    if (!owner.has(h.image)) {
      if (!h.inUse) remove.push({ image: h.image, reason: 'unwanted', accountId: null, sizeBytes: h.sizeBytes });
      else if (!h.accountId) fixed += h.sizeBytes;
      else {
        // Wanted by no one but held by a container: in the share of the account it was pulled for.
        let a = accounts.find((x) => x.id === h.accountId);
        if (!a) accounts.push((a = { id: h.accountId, images: [], pinned: 0 }));
        a.pinned += h.sizeBytes;
      }
    }

  /** The account's images that fit `share`, in its order; those of unknown size after the others. */
  const fit = (a: Account, share: number): Fit => {
    let left = share - a.pinned;
    const taken: Fit['taken'] = [];
    const unknown: string[] = [];
    for (const image of a.images) {
      const h = held.get(image);
      const size = sizeOf(image);
      if (h?.inUse) taken.push({ image, roomBytes: h.sizeBytes });
      else if (size === undefined) unknown.push(image);
      else if (size <= left) {
        taken.push({ image, roomBytes: size });
        left -= size;
      }
    }
    for (const image of unknown) {
      if (left <= 0) break;
      taken.push({ image, roomBytes: left });
      left = 0;
    }
    return { used: share - left, taken };
  };

  // Water-filling: accounts whose whole want fits an equal part take it; the rest share what is left.
  const capacity = Math.max(0, input.budgetBytes - fixed);
  const demand = new Map(accounts.map((a) => [a.id, Math.max(a.pinned, fit(a, capacity).used)]));
  const shares = new Map<string, number>();
  let open = accounts;
  let left = capacity;
  while (open.length > 0) {
    const part = left / open.length;
    const settled = open.filter((a) => demand.get(a.id)! <= part || a.pinned >= part);
    if (settled.length === 0) break;
    for (const a of settled) {
      const take = a.pinned >= part ? a.pinned : demand.get(a.id)!;
      shares.set(a.id, take);
      left -= take;
    }
    open = open.filter((a) => !settled.includes(a));
  }
  for (const a of open) shares.set(a.id, Math.max(0, left / open.length));
  // What a share leaves because its account's next image does not fit it is lent, to the account
  // using least first: the lender gets it back when its images fit (their removal makes the room).
  let spare = capacity - accounts.reduce((sum, a) => sum + fit(a, shares.get(a.id)!).used, 0);
  const using = new Map(open.map((a) => [a.id, fit(a, shares.get(a.id)!).used]));
  for (const a of [...open].sort((x, y) => using.get(x.id)! - using.get(y.id)!)) {
    if (spare <= 0) break;
    const used = using.get(a.id)!;
    const more = fit(a, used + spare).used;
    if (more > used) {
      shares.set(a.id, more);
      spare -= more - used;
    }
  }

  const keep: string[] = [];
  const pulls: PrepullPull[][] = [];
  const over: Array<{ excess: number; removals: PrepullRemoval[] }> = [];
  for (const a of accounts) {
    const share = shares.get(a.id)!;
    const taken = fit(a, share).taken;
    const takenImages = new Set(taken.map((t) => t.image));
    const mine: PrepullPull[] = [];
    for (const t of taken)
      if (held.has(t.image)) keep.push(t.image);
      else mine.push({ image: t.image, accountId: a.id, roomBytes: t.roomBytes });
    pulls.push(mine);
    const heldBytes = a.images.reduce((sum, i) => sum + (held.get(i)?.sizeBytes ?? 0), 0);
    const removals = a.images
      .filter((i) => held.has(i) && !takenImages.has(i))
      .reverse()
      .map((i): PrepullRemoval => ({
        image: i,
        reason: 'over-share',
        accountId: a.id,
        sizeBytes: held.get(i)!.sizeBytes,
      }));
    if (removals.length > 0) over.push({ excess: heldBytes - share, removals });
  }
  over.sort((x, y) => y.excess - x.excess);
  for (const o of over) remove.push(...o.removals);

  const pull: PrepullPull[] = [];
  for (let i = 0; pulls.some((p) => i < p.length); i++) for (const p of pulls) if (i < p.length) pull.push(p[i]!);
  return { shares, keep, pull, remove };
}
