// Listeners of a simulator's events (a state's onChange for its snapshot
// writer, the cloud's instance events for its node sync), called in order of
// subscription; one may unsubscribe, even while being called.

export class Listeners<A extends unknown[]> {
  private readonly list: ((...args: A) => void)[] = [];

  /** Subscribes; returns a function that unsubscribes. */
  add(listener: (...args: A) => void): () => void {
    this.list.push(listener);
    return () => {
      const i = this.list.indexOf(listener);
      if (i >= 0) this.list.splice(i, 1);
    };
  }

  emit(...args: A): void {
    for (const l of [...this.list]) l(...args);
  }
}
