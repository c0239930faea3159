/**
 * The limit settings of the environment (OPTMARK_PROTECT_LIMIT,
 * OPTMARK_VERIFY_LIMIT, OPTMARK_VAULT_BYTES) fill the limits table when the database is created;
 * afterwards the table decides. A setting given at a later start that differs
 * from the table is named, so that an operator who changed it learns that it
 * no longer applies and which command changes the limit now.
 */
import type { Config } from '../config.js';
import type { Store } from './ports.js';

export async function ignoredLimitSettings(config: Pick<Config, 'limitSeeds' | 'limitSettingsGiven'>, store: Pick<Store, 'planLimits' | 'serviceSettings'>): Promise<string[]> {
  if (config.limitSettingsGiven.length === 0) return [];
  const plans = await store.planLimits();
  const paid = [plans.pro, plans.lifetime];
  const { protectPerMonth, verifyPerMonth, vaultBytes } = config.limitSeeds;
  const ceiling = config.limitSettingsGiven.includes('OPTMARK_SCAN_CEILING') ? (await store.serviceSettings()).scanCeilingPerDay : config.limitSeeds.scanCeiling;
  const differs = {
    OPTMARK_PROTECT_LIMIT: paid.some((p) => p.protectPerMonth !== protectPerMonth) && `--protect ${protectPerMonth}`,
    OPTMARK_VERIFY_LIMIT: paid.some((p) => p.verifyPerMonth !== verifyPerMonth) && `--verify ${verifyPerMonth}`,
    OPTMARK_SCAN_CEILING: ceiling !== config.limitSeeds.scanCeiling && String(config.limitSeeds.scanCeiling),
    OPTMARK_VAULT_BYTES: paid.some((p) => p.vaultBytes !== vaultBytes) && `--vault-bytes ${vaultBytes}`,
  };
  return config.limitSettingsGiven.flatMap((name) => {
    const option = differs[name];
    if (!option) return [];
    if (name === 'OPTMARK_SCAN_CEILING') {
      return [`${name} differs from the service settings, which decide since the database was created, and is ignored. To change the ceiling: optmark scans set-ceiling ${option}`];
    }
    return [
      `${name} differs from the limits table, which decides since the database was created, and is ignored. ` +
        `To change the limit: optmark plans set pro ${option} (and lifetime), or for one account optmark accounts set-limits NAME ${option}`,
    ];
  });
}
