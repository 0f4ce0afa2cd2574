//! SA MADs on QP1 (IBA 1 §15.2): the broadcast join and its answer, a send-only join, a leave,
//! a path query and answer, a table of groups, a trap subscription, traps 66 and 67, ClassPortInfo.

use super::ipoib::MCAST_GROUP;
use super::{gsi, Sample, A, B, BROADCAST_MLID, P_KEY, SM};
use crate::ipoib::mcast::{broadcast_mgid, ipv4_mgid, Scope};
use crate::keys::QKey;
use crate::mad::{InformInfoRepr, MadStatus, Method, NoticeRepr};
use crate::sa::{
    mcr_mask, pr_mask, JoinState, McMemberRecordRepr, Mtu, PathRecordRepr, Rate, SaAttribute,
    SaMadRepr, Selector,
};

/// TransactionIDs: the agent's high half (as Linux's MAD layer sets it) and a counter.
const TID_BASE: u64 = 0x0000_0001_0000_0000;
/// The sequence of the first SA MAD's PSN (the GSI numbers its UD sends itself).
const PSN_BASE: u32 = 0x100;

pub(super) fn samples() -> Vec<Sample> {
    let join = broadcast_join();
    let join_resp = join.response(
        MadStatus::SUCCESS,
        SaAttribute::McMemberRecord(broadcast_group()),
    );
    let path_req = path_get();
    let table_req = SaMadRepr::request(
        Method::GetTable,
        TID_BASE + 7,
        0,
        SaAttribute::McMemberRecord(McMemberRecordRepr::default()),
    );
    let table = table_req
        .table_response(
            MadStatus::SUCCESS,
            &[
                SaAttribute::McMemberRecord(broadcast_group()),
                SaAttribute::McMemberRecord(mcast_group()),
            ],
        )
        .expect("two records fit in one MAD");
    let mgid = broadcast_group().mgid;
    // The SA reports traps to subscribers with SubnAdmReport(Notice) (IBA 1 §13.4.8.2).
    let trap = |n: u16, tid: u64| {
        let notice = NoticeRepr::gid_trap(n, mgid, SM.lid, SM.gid());
        SaMadRepr::request(Method::Report, tid, 0, SaAttribute::Notice(notice))
    };
    let to_sm = |m: &SaMadRepr, psn: u32| gsi(&A, &SM, PSN_BASE + psn, &m.to_bytes());
    let to_a = |m: &SaMadRepr, psn: u32| gsi(&SM, &A, PSN_BASE + psn, &m.to_bytes());
    vec![
        Sample::new("sa_mcmember_set_join", to_sm(&join, 0)),
        Sample::new("sa_mcmember_getresp", to_a(&join_resp, 0)),
        Sample::new("sa_mcmember_set_sendonly", to_sm(&send_only_join(), 1)),
        Sample::new("sa_mcmember_delete", to_sm(&leave(), 2)),
        Sample::new("sa_path_get", to_sm(&path_req, 3)),
        Sample::new(
            "sa_path_getresp",
            to_a(
                &path_req.response(MadStatus::SUCCESS, SaAttribute::PathRecord(path_a_to_b())),
                1,
            ),
        ),
        Sample::new("sa_mcmember_gettableresp", to_a(&table, 2)),
        Sample::new("sa_informinfo_set", to_sm(&inform_info_set(), 4)),
        Sample::new(
            "sa_notice_report_trap66",
            to_a(&trap(66, 0x0000_0002_0000_0001), 3),
        ),
        Sample::new(
            "sa_notice_report_trap67",
            to_a(&trap(67, 0x0000_0002_0000_0002), 4),
        ),
        Sample::new(
            "sa_classportinfo_get",
            to_sm(&SaMadRepr::class_port_info_get(TID_BASE + 9), 5),
        ),
    ]
}

/// A's join request record: MGID, PortGID, JoinState only.
fn join_record(mgid: crate::types::Gid, join_state: JoinState) -> McMemberRecordRepr {
    McMemberRecordRepr {
        mgid,
        port_gid: A.gid(),
        join_state,
        ..McMemberRecordRepr::default()
    }
}

/// SubnAdmSet(MCMemberRecord) joining the IPoIB broadcast group ff12:401b:ffff::ffff:ffff as a
/// full member (draft-ietf-ipoib-ip-over-infiniband-06 §5; docs/DEPLOYED.md: OpenSM needs the JOIN
/// components).
fn broadcast_join() -> SaMadRepr {
    let mgid = broadcast_mgid(P_KEY, Scope::LinkLocal);
    SaMadRepr::mcmember_join(
        TID_BASE + 1,
        join_record(mgid, JoinState::FULL_MEMBER),
        mcr_mask::JOIN,
    )
}

/// The broadcast group as OpenSM's partitions.conf creates it (docs/DEPLOYED.md: Q_Key 0x0b1b,
/// MTU 4 = 2048, rate 3 = 10 Gb/s, SL 0, scope 2), with A a full member.
fn broadcast_group() -> McMemberRecordRepr {
    McMemberRecordRepr {
        mgid: broadcast_mgid(P_KEY, Scope::LinkLocal),
        port_gid: A.gid(),
        qkey: QKey::IPOIB_BROADCAST,
        mlid: BROADCAST_MLID,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::Mtu2048,
        tclass: 0,
        pkey: P_KEY,
        rate_selector: Selector::Exactly,
        rate: Rate::Gbps10,
        packet_life_time_selector: Selector::Exactly,
        packet_life_time: 18,
        sl: 0,
        flow_label: 0,
        hop_limit: 0,
        scope: 2,
        join_state: JoinState::FULL_MEMBER,
        proxy_join: false,
    }
}

/// The 224.1.2.3 group, which A joined send-only.
fn mcast_group() -> McMemberRecordRepr {
    McMemberRecordRepr {
        mgid: ipv4_mgid(MCAST_GROUP, P_KEY, Scope::LinkLocal),
        mlid: super::ipoib::MCAST_MLID,
        join_state: JoinState::SEND_ONLY_NON_MEMBER,
        ..broadcast_group()
    }
}

/// A send-only non-member join of 224.1.2.3 (Linux IPoIB joins groups it only sends to this way).
fn send_only_join() -> SaMadRepr {
    let mgid = ipv4_mgid(MCAST_GROUP, P_KEY, Scope::LinkLocal);
    SaMadRepr::mcmember_join(
        TID_BASE + 2,
        join_record(mgid, JoinState::SEND_ONLY_NON_MEMBER),
        mcr_mask::JOIN,
    )
}

/// SubnAdmDelete(MCMemberRecord): A leaves the broadcast group.
fn leave() -> SaMadRepr {
    let mgid = broadcast_mgid(P_KEY, Scope::LinkLocal);
    SaMadRepr::mcmember_leave(
        TID_BASE + 3,
        join_record(mgid, JoinState::FULL_MEMBER),
        mcr_mask::JOIN,
    )
}

/// SubnAdmGet(PathRecord) from A to B as Linux IPoIB asks (DGID, SGID, NumbPath 1, TClass, P_Key).
fn path_get() -> SaMadRepr {
    let rec = PathRecordRepr {
        dgid: B.gid(),
        sgid: A.gid(),
        numb_path: 1,
        reversible: true,
        pkey: P_KEY,
        ..PathRecordRepr::default()
    };
    let mask = pr_mask::DGID
        | pr_mask::SGID
        | pr_mask::REVERSIBLE
        | pr_mask::NUMB_PATH
        | pr_mask::TCLASS
        | pr_mask::P_KEY;
    SaMadRepr::path_get(TID_BASE + 4, rec, mask)
}

/// The path from A to B the SA returns.
fn path_a_to_b() -> PathRecordRepr {
    PathRecordRepr {
        service_id: 0,
        dgid: B.gid(),
        sgid: A.gid(),
        dlid: B.lid,
        slid: A.lid,
        raw_traffic: false,
        flow_label: 0,
        hop_limit: 0,
        tclass: 0,
        reversible: true,
        numb_path: 1,
        pkey: P_KEY,
        qos_class: 0,
        sl: 0,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::Mtu2048,
        rate_selector: Selector::Exactly,
        rate: Rate::Gbps10,
        packet_life_time_selector: Selector::Exactly,
        packet_life_time: 18,
        preference: 0,
    }
}

/// SubnAdmSet(InformInfo): subscribe to trap 66 (new multicast group) from anyone.
fn inform_info_set() -> SaMadRepr {
    SaMadRepr::request(
        Method::Set,
        TID_BASE + 8,
        0,
        SaAttribute::InformInfo(InformInfoRepr::generic(true, 66, 1)),
    )
}
